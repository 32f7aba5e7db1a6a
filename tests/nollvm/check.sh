#!/usr/bin/env bash
# Usage: check.sh <source dir> <work dir> [c++ compiler]
# Builds libweft without LLVM (as scripts/gpu-check.sh does on a GPU machine, where LLVM's
# development libraries are missing), then builds and runs tests/nollvm/main.cpp against it:
# once as is (no device: CPU pipelines in the interpreter, Target::cuda() refused clearly) and
# once on the CPU emulation of a device (WEFT_CUDA_EMULATOR=1: kernels and host stages).
set -euo pipefail
src=$1
work=$2
cxx=${3:-c++}
mkdir -p "$work"
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
echo "== configuring weft without LLVM in $work"
cmake -S "$src" -B "$work" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DWEFT_WITH_LLVM=OFF -DWEFT_BUILD_TESTS=OFF \
      -DWEFT_BUILD_APPS=OFF -DCMAKE_CXX_COMPILER="$cxx" >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
echo "== building libweft"
cmake --build "$work" -j 2 --target weft
echo "== building the check"
"$cxx" -std=c++17 -O1 -I"$src/include" "$src/tests/nollvm/main.cpp" -o "$work/weft_nollvm_check" "$work/libweft.a" -lpthread -ldl
echo "== running it without a device"
env -u WEFT_CUDA_EMULATOR "$work/weft_nollvm_check"
echo "== running it on the CPU emulation of a device"
WEFT_CUDA_EMULATOR=1 "$work/weft_nollvm_check"
