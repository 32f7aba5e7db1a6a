#!/usr/bin/env bash
# Builds the simplifier fuzzer with clang++-14 (libFuzzer + ASan + UBSan) and runs it for
# $1 seconds (default 60). Exits nonzero if the fuzzer finds a crash or a mismatch.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-60}"
JOBS="${FUZZ_JOBS:-1}"
CXX="${CXX_FUZZ:-clang++-14}"
OUT=build-fuzz
mkdir -p "$OUT/corpus" "$OUT/artifacts"
# The interpreter (src/ir/Evaluate.cpp) calls the runtime's print functions, so the runtime links in.
SRCS=(fuzz/fuzz_simplify.cpp src/ir/*.cpp src/runtime/Runtime.cpp)
BIN="$OUT/fuzz_simplify"
NEED=0
[ -x "$BIN" ] || NEED=1
for f in "${SRCS[@]}" src/ir/*.h src/runtime/*.h include/weft/*.h; do [ "$f" -nt "$BIN" ] && NEED=1; done
if [ "$NEED" = 1 ]; then
  echo "building $BIN"
  "$CXX" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I include -I src "${SRCS[@]}" -o "$BIN"
fi
# Deep recursion makes many distinct allocation stacks; keep ASan's stack depot small.
export ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=2:quarantine_size_mb=32}"
ARGS=(-max_len=256 -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$OUT/artifacts/")
if [ "$JOBS" -gt 1 ]; then ARGS+=(-jobs="$JOBS" -workers="$JOBS"); fi
exec "$BIN" "${ARGS[@]}" "$OUT/corpus" fuzz/regressions
