#!/usr/bin/env bash
# Usage: check.sh <weft build dir> <consumer source dir> [c++ compiler] [extra compile/link flags]
# Installs weft from the build dir into a temporary prefix, then configures, builds and runs a
# tiny project that uses find_package(weft CONFIG REQUIRED) and links weft::weft.
set -euo pipefail
build_dir=$1
consumer_src=$2
cxx=${3:-c++}
extra_flags=${4:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "== installing $build_dir into $tmp/prefix"
cmake --install "$build_dir" --prefix "$tmp/prefix"

gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
echo "== configuring the consumer"
cmake -S "$consumer_src" -B "$tmp/build" "${gen[@]}" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$extra_flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$extra_flags"
echo "== building the consumer"
cmake --build "$tmp/build" -j 2
echo "== running the consumer"
"$tmp/build/weft_consumer"
if [ -x "$tmp/build/weft_bench_consumer" ]; then
  echo "== running the benchmarking app built from weft/bench.h"
  "$tmp/build/weft_bench_consumer" list | grep -q brighten
  out=$("$tmp/build/weft_bench_consumer" run --size width=64 --size height=32 --min-time 0.01 --warmup 0 --min-reps 3 --no-profile)
  echo "$out"
  grep -Eq '^brighten +64x32 .* ok +C\+\+ loop [0-9.]+x' <<< "$out"
fi
