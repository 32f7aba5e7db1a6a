#!/usr/bin/env bash
# The GPU device check, for a machine with one NVIDIA GPU, CUDA, CMake and ninja (no LLVM, no
# network needed): builds weft without LLVM (host code runs in the interpreter), builds the
# GPU tests (if GoogleTest is installed) and the check/benchmark program, runs the check and
# benchmarks first (their table is printed then, and again last), then the GPU tests and the
# apps' GPU schedules. Without a CUDA device it says so after the build and exits 0.
#   usage: scripts/gpu-check.sh [--quick] [--bench-only]     env: BUILD_DIR, JOBS, CXX, EXTRA_LDFLAGS, PREBUILT
# The table and every schedule's time are also written to BUILD_DIR/gpu_results.json.
# PREBUILT=1 uses weft_gpu_check, weft_demo and weft_gpu_tests already in BUILD_DIR where they run
# on this machine (built elsewhere with EXTRA_LDFLAGS="-static-libstdc++ -static-libgcc", say),
# and builds them otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build-gpucheck}
JOBS=${JOBS:-$(nproc)}
CXX=${CXX:-c++}
CHECK_ARGS="$*"  # --quick, --bench-only: passed to weft_gpu_check
say() { echo "[gpu-check] $*"; }
# NVRTC, its builtins and cuBLAS are loaded with dlopen: make the toolkit's libraries findable.
CUDA_DIR=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
for d in "$CUDA_DIR/lib64" "$CUDA_DIR/targets/x86_64-linux/lib"; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
t0=$(date +%s)

LDX=${EXTRA_LDFLAGS:-}
HAVE_GTEST=0
if [ -n "${PREBUILT:-}" ] && "$B/weft_gpu_check" --version >/dev/null 2>&1 && [ -x "$B/weft_demo" ]; then
    say "using the prebuilt binaries in $B"
    [ -x "$B/weft_gpu_tests" ] && "$B/weft_gpu_tests" --gtest_list_tests >/dev/null 2>&1 && HAVE_GTEST=1
else
    say "configuring weft without LLVM in $B"
    mkdir -p "$B"
    cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_WITH_LLVM=OFF -DWEFT_BUILD_TESTS=OFF \
          -DWEFT_BUILD_APPS=OFF >"$B/configure.log" 2>&1 || { cat "$B/configure.log"; say "configure FAILED"; exit 1; }
    say "building libweft (-j$JOBS)"
    ninja -C "$B" -j"$JOBS" weft || { say "build FAILED"; exit 1; }
    INC="-Iinclude -Isrc -Ijit -Itests"
    say "building weft_gpu_check"
    $CXX -std=c++17 -O2 $INC bench/gpu/gpu_check.cpp -o "$B/weft_gpu_check" "$B/libweft.a" -lpthread -ldl $LDX \
        || { say "build of weft_gpu_check FAILED"; exit 1; }
    say "building weft_demo (the example apps; --target host-cuda runs their GPU schedules)"
    $CXX -std=c++17 -O2 -Iinclude -Iapps apps/weft_demo.cpp apps/blur.cpp apps/matmul.cpp apps/histogram.cpp -o "$B/weft_demo" "$B/libweft.a" \
        -lpthread -ldl $LDX || { say "build of weft_demo FAILED"; exit 1; }
    HAVE_GTEST=0
    if echo '#include <gtest/gtest.h>
    int main(){return 0;}' | $CXX -std=c++17 -x c++ - -o "$B/.gtest_probe" -lgtest -lpthread >/dev/null 2>&1; then
        HAVE_GTEST=1
        say "building the GPU tests (GoogleTest found)"
        $CXX -std=c++17 -O1 $INC tests/gpu/*.cpp -o "$B/weft_gpu_tests" "$B/libweft.a" -lgtest -lgtest_main -lpthread -ldl $LDX \
            || { say "build of the GPU tests FAILED"; HAVE_GTEST=0; }
    else
        say "GoogleTest not found: the GPU tests' pipelines are checked by weft_gpu_check instead"
    fi
fi
say "build done in $(( $(date +%s) - t0 ))s"

rc=0
# The check and benchmarks first (the table is what a short device session is for), then the
# GPU tests and the apps; the table is printed again at the end.
say "running the device check and benchmarks (without a device it says so and exits 0)"
timeout 420 "$B/weft_gpu_check" $CHECK_ARGS --json "$B/gpu_results.json" 2>&1 | tee "$B/check.log"
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
if grep -q "no CUDA device" "$B/check.log"; then
    say "finished in $(( $(date +%s) - t0 ))s (exit $rc)"
    exit $rc
fi
if [ $HAVE_GTEST = 1 ]; then
    # The tests' references run in the interpreter (no LLVM here): on a real device they are
    # CPU-bound, so the tests run in shards, one process each (GoogleTest's sharding), all at once.
    SHARDS=$(( JOBS < 8 ? JOBS : 8 ))
    [ -n "${WEFT_CUDA_EMULATOR:-}" ] && SHARDS=1
    say "running the GPU tests (GPUNvrtc*, GPURun*) in $SHARDS shards"
    TESTS_LIMIT=240
    [ -n "${WEFT_CUDA_EMULATOR:-}" ] && TESTS_LIMIT=900  # the CPU emulation runs kernels slowly
    pids=()
    for ((i = 0; i < SHARDS; i++)); do
        GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$i timeout $TESTS_LIMIT "$B/weft_gpu_tests" --gtest_print_time=1 \
            >"$B/tests.$i.log" 2>&1 &
        pids+=($!)
    done
    t_rc=0
    for ((i = 0; i < SHARDS; i++)); do
        wait "${pids[$i]}"; r=$?
        [ $r = 124 ] && say "GPU test shard $i TIMED OUT after ${TESTS_LIMIT}s"
        [ $r != 0 ] && t_rc=1
    done
    # Failures with their messages, skips' reasons, and every test over 5 s.
    cat "$B"/tests.*.log | grep -E "Failure|FAILED|Skipped|Expected|Which is|actual|^\[ +OK \] .*\(([0-9]{4,}) ms\)|^\[  PASSED" |
        grep -vE "^\[ +OK \] .*\(([0-4][0-9]{3}) ms\)"
    if [ $t_rc != 0 ]; then say "GPU tests FAILED (logs: $B/tests.*.log)"; rc=1; fi
fi
DEMO_ARGS="--target host-cuda"
[ -n "${WEFT_CUDA_EMULATOR:-}" ] && DEMO_ARGS="$DEMO_ARGS --size 128"  # a dry run on the CPU emulation: small
say "running weft_demo $DEMO_ARGS (the apps' GPU schedules: blur, matmul, histogram)"
demo=$(timeout 120 "$B/weft_demo" $DEMO_ARGS 2>&1); demo_rc=$?
echo "$demo"
if [ $demo_rc -ne 0 ]; then say "weft_demo FAILED"; rc=1; fi
say "the table again:"
sed -n '/^benchmark /,$p' "$B/check.log"
say "finished in $(( $(date +%s) - t0 ))s (exit $rc)"
exit $rc
