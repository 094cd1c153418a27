#!/usr/bin/env bash
# Builds the binaries that run on the GPU machine (no OpenCV, Eigen GEMM, static
# GoogleTest, sm_90 only: the machine is an H100, and one architecture compiles
# several times faster than CMake's default list, docs/jetson.md) and gathers them with the test data into device-carry/
# (git-ignored), which a device run carries. Usage: scripts/device_prepare.sh [SHARED_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${1:-../shared}"
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLR_CUDA=ON -DDLR_OPENCV=OFF -DDLR_BLAS=EIGEN \
  -DDLR_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build build-device -j"$(nproc)" --target dlr_gpu_tests dlr_public_tests dlrun dlgen dlbench dlprobe dlsoak dlr_cuda_plugin dlrun_shared
rm -rf device-carry && mkdir -p device-carry/bin device-carry/shared/models device-carry/shared/weights device-carry/shared/images
for b in tests/dlr_gpu_tests tests/dlr_public_tests tools/dlrun tools/dlgen tools/dlbench tools/dlprobe tools/dlsoak; do
  cp "build-device/$b" device-carry/bin/ && strip device-carry/bin/"$(basename "$b")"
done
# dlrun and libdlrun.so load the CUDA backend from beside themselves
# (runtime/backend_loader.cpp); the install test's consumer uses libdlrun.so (phase plugin).
cp build-device/runtime/libdlrun-cuda.so.* device-carry/bin/ && strip device-carry/bin/libdlrun-cuda.so.*
cp -L build-device/runtime/libdlrun.so.?.? device-carry/bin/ && strip device-carry/bin/libdlrun.so.?.?
c++ -std=c++17 -O1 tests/install/consumer/main.cpp -Iruntime/include -Ibuild-device/include -Lbuild-device/runtime \
  -ldlrun -Wl,-rpath,'$ORIGIN' -o device-carry/bin/consumer_shared
cp "$shared"/models/*.cfg device-carry/shared/models/
cp -r "$shared"/models/darknet-cfg device-carry/shared/models/  # the cfg-table walk (CfgWalkGpu)
cp "$shared"/weights/yolo-fastest-1.1.cfg "$shared"/weights/yolo-fastest-1.1.weights device-carry/shared/weights/
# Decoded test images (the GPU machine has no OpenCV): binary PPM, converted by a host
# dlimage with OpenCV, built here into build-host/ (also from a clean clone).
cmake -S . -B build-host -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLR_CUDA=OFF -DDLR_OPENCV=ON -DDLR_BUILD_TESTS=OFF \
  >/dev/null
cmake --build build-host -j"$(nproc)" --target dlimage >/dev/null
for img in dog eagle giraffe horses kite person; do
  build-host/tools/dlimage convert "$shared/images/$img.jpg" "device-carry/shared/images/$img.ppm"
done
cp scripts/device_run.sh scripts/h100_profile.json scripts/plot_budget_curve.py device-carry/
du -sh device-carry
