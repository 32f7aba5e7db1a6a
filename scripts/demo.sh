#!/usr/bin/env bash
# Builds weft and runs the demo app (weft_demo) on its built-in data.
# Works on a fresh Debian 12 machine: installs what is missing with apt-get (sudo if not root).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-common.sh
echo "== running weft_demo"
"$BUILD_DIR/apps/weft_demo"
