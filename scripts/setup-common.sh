# Shared by demo.sh and test.sh: installs what is missing (apt-get; sudo if not root),
# then configures and builds weft with Ninja into $BUILD_DIR (default build/).
PACKAGES=(build-essential cmake ninja-build ccache llvm-19-dev libeigen3-dev libxxhash-dev libgtest-dev googletest
          clang-14 libclang-rt-14-dev
          libcli11-dev nlohmann-json3-dev libcpp-httplib-dev libjs-chart.js pkg-config
          chromium python3-websocket libbenchmark-tools python3-scipy)

install_missing() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$p")
        fi
    done
    if ((${#missing[@]} == 0)); then
        return
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        sudo=(sudo)
    fi
    echo "== installing: ${missing[*]}"
    "${sudo[@]}" apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

install_missing

BUILD_DIR=${WEFT_BUILD_DIR:-build}
JOBS=${WEFT_JOBS:-$(nproc)}
echo "== configuring into $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
echo "== building"
cmake --build "$BUILD_DIR" -j "$JOBS"
