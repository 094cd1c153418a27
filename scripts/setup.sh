#!/usr/bin/env bash
# Installs dlrun's build dependencies from Debian packages (Debian 12).
# Why each one is needed: docs/dependencies.md. Safe to run more than once.
#   --arm64: also what the aarch64 cross build and its qemu test run need
#            (scripts/arm64_test.sh): adds dpkg's arm64 architecture, then Debian's
#            cross compiler, qemu-user and the :arm64 libraries the CPU build links.
#   --tools: only what building the tools and the library needs (scripts/demo.sh,
#            configured with -DDLR_BUILD_TESTS=OFF): no test, plot or Python packages.
set -euo pipefail
arm64=0
tools_only=0
case "${1:-}" in
  --arm64) arm64=1 ;;
  --tools) tools_only=1 ;;
  "") ;;
  *) echo "setup.sh: unknown option '$1' (expected --arm64 or --tools)" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config
  libopencv-dev libopencv-dnn-dev         # image I/O, drawing, OpenCV-DNN fidelity tests
  libeigen3-dev libopenblas-dev           # CPU GEMM (Eigen; OpenBLAS optional)
  libcli11-dev nlohmann-json3-dev         # command lines, JSON
  libspdlog-dev libfmt-dev                # logging (spdlog used header-only)
  libxxhash-dev                           # XXH3 identity hashes of prepared weight files (header-only)
  liburing-dev                            # io_uring reads of streamed weights (linked statically)
  ccache                                  # scripts/build.sh compiles through it when present
)
if [ "$tools_only" = 0 ]; then
  packages+=(
    libgtest-dev                            # tests
    gstreamer1.0-plugins-base               # tests: videotestsrc/videoconvert/appsink for the GStreamer stream test
    xvfb                                    # tests: a headless X server for the dlrun --show window test
    python3-matplotlib                      # docs/ plots from benchmark JSON
    pybind11-dev python3-dev python3-numpy  # the Python module dlrun and its test
  )
fi
if [ "$arm64" = 1 ]; then
  packages+=(
    g++-aarch64-linux-gnu qemu-user         # cross compiler; runs the aarch64 tests on x86-64
    libspdlog-dev:arm64 libfmt-dev:arm64    # the target's own copies of the libraries with
    libgtest-dev:arm64 libxxhash-dev:arm64  # per-architecture files (Eigen, CLI11 and
    liburing-dev:arm64                      # nlohmann-json are the host's, architecture-free)
    libgomp1:arm64                          # OpenMP runtime the aarch64 tests load under qemu (the
  )                                         # cross compiler's own copy is not on qemu's library path)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if [ "$arm64" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64   # multiarch: :arm64 packages beside the amd64 ones
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
