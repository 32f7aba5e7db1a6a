#!/usr/bin/env bash
# Builds weft and runs the whole test suite with ctest.
# Works on a fresh Debian 12 machine: installs what is missing with apt-get (sudo if not root).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-common.sh
echo "== running the tests"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 600
