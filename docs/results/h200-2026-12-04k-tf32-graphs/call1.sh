#!/usr/bin/env bash
# Next session: the int8 rule (filters under 128 weights kept fp) on the GPU. Build here
# first (dlr_cuda_plugin dlr_gpu_tests dlbench dlrun dlgen), pack bin.tar.xz as in call_j3.sh.
set -u
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; O="$OUT"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
mkdir -p /tmp/img && python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite('/tmp/img/'+os.path.basename(f)[:-4]+'.ppm', cv2.imread(f))"; ls /tmp/img
timeout 330 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*:FusedConvTest.MatchesTheCpuReference' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|tests ran' "$O/tests.log" | head -20
python3 scripts/weight_format_fidelity.py --dlrun "$B/dlrun" --cfg "$S/weights/yolo-fastest-1.1.cfg" \
  --weights "$S/weights/yolo-fastest-1.1.weights" --flags "--device cuda --precision fp16" --json "$O/fid.json" /tmp/img/*.ppm | tail -10
python3 scripts/weight_format_fidelity.py --dlrun "$B/dlrun" --cfg "$S/weights/yolo-fastest-1.1.cfg" \
  --weights "$S/weights/yolo-fastest-1.1.weights" --flags "--weight-format int8" --ref "--device cpu" --test "--device cuda --precision fp32" --json "$O/fid_cpu_gpu.json" /tmp/img/*.ppm | tail -4
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
b() { local n=$1; shift; DLR_CACHE_DIR=/tmp/c timeout 90 "$B/dlbench" "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
P="--size 608 --precision fp16 --cache --weights $W"
ITERS=5 b warm "$y" $P --iters 5 --warmup 2
b p16 "$y" $P --iters 300 --warmup 20
b q8min "$y" $P --weight-format int8 --mode stream --weight-budget min --iters 200 --warmup 20
b q8_50 "$y" $P --weight-format int8 --mode stream --weight-budget 50% --iters 200 --warmup 20
b q8pre "$y" $P --weight-format int8 --iters 300 --warmup 20
grep -h "median" "$O"/*.txt | head
