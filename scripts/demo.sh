#!/usr/bin/env bash
# Builds weft and runs the benchmarking app weft-bench on its built-in pipelines and data
# (arguments are passed to weft-bench: `./scripts/demo.sh serve`, `./scripts/demo.sh run blur`).
# Works on a fresh Debian 12 machine: installs what is missing with apt-get (sudo if not root).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-common.sh
echo "== running weft-bench $*"
exec "$BUILD_DIR/apps/bench/weft-bench" "$@"
