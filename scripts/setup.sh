#!/usr/bin/env bash
# Installs dlrun's build dependencies from Debian packages (Debian 12).
# Why each one is needed: docs/dependencies.md. Safe to run more than once.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libopencv-dev libopencv-dnn-dev         # image I/O, drawing, OpenCV-DNN fidelity tests
  libeigen3-dev libopenblas-dev           # CPU GEMM (Eigen; OpenBLAS optional)
  libcli11-dev nlohmann-json3-dev         # command lines, JSON
  libspdlog-dev libfmt-dev                # logging (spdlog used header-only)
  libxxhash-dev                           # XXH3 identity hashes of prepared weight files (header-only)
  liburing-dev                            # io_uring reads of streamed weights (linked statically)
  libgtest-dev                            # tests
  gstreamer1.0-plugins-base               # tests: videotestsrc/videoconvert/appsink for the GStreamer stream test
  xvfb                                    # tests: a headless X server for the dlrun --show window test
  python3-matplotlib                      # docs/ plots from benchmark JSON
  pybind11-dev python3-dev python3-numpy  # the Python module dlrun and its test
  ccache                                  # scripts/build.sh compiles through it when present
)

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
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
