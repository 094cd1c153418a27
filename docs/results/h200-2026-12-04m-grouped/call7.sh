#!/usr/bin/env bash
# The tests whose host-to-device copies now wait for their DMA (tests/gpu to_device: a
# cudaMemcpy from pageable memory may return before the data lands, and the tests'
# streams are non-blocking; call 6's forms bench read weights still landing once), on
# the binaries of 5ebd1b2 plus that fix; then the forms bench.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
timeout 300 "$B/dlr_gpu_tests" --gtest_filter='Tf32x3Test.*:ConcatConvGpu.*:FusedConvTest.*:EpilogueAdd.*:FusionGpu.*:HostWait.*:Int8Gpu.*:MirroredBuffer.*:BiasActivationTest.*' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[==========\]|^\[  (PASSED|FAILED|SKIPPED)|Failure' "$O/tests.log" | head -20
DLR_GPU_BENCH=1 DLR_BENCH_JSON=$O/bench timeout 120 "$B/dlr_gpu_tests" --gtest_filter='ConvAlgoBench.ThreeTf32Forms' >"$O/forms.log" 2>&1
echo "forms rc=$?"; grep -E '\[forms\] sums|Failure|^\[  (PASSED|FAILED)' "$O/forms.log" | head
