#!/usr/bin/env bash
# Call 1 (twenty-third session): [yolo] candidates picked on the GPU (--decode gpu, the
# new default) against whole outputs scanned on the host (--decode cpu).
# 1. the new GPU tests (the select kernel, same detections both ways, an overflowed head)
#    and the engine/batch/stream tests around the output downloads;
# 2. dlrun over 480 frames of the six images, yolov4 @608 fp16 preload, batch 1 and 8,
#    --decode gpu and cpu: the same detections' text either way;
# 3. dlbench rows, each its own process: fp16 preload b1 and b8, --decode gpu,cpu, each
#    with --detect (Session::detect_batch end to end on 8-bit images, with its parts);
#    issue 33's int8 row at the minimum pool beside fp16 preload, and fp16 at min and 50 %,
#    staged copies queued early where predicted faster (--staging-early on, the default) and
#    always late (off); issue 30's fp32 in 8 MiB.
# Needs device-carry/bin.tar.xz: a device build with --decode and --staging-early (the
# twenty-fourth session's HEAD or later).
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"; M=$S/models
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
F='DecodeOnDevice.*:YoloSelect*:CudaEngine.*:*Batch*:StreamMode.*:StorageMode.*:RuntimeGpu.*:Int8Gpu.*:MultiSession.*'
timeout 240 "$B/dlr_gpu_tests" --gtest_filter="$F" >"$O/tests.log" 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED)|Failure|the same either way' "$O/tests.log" | head -20
y="$M/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
L=/tmp/l.txt; : > $L; for _ in $(seq 80); do ls $S/images/*.ppm >> $L; done  # 480 frames
for r in 1; do for bt in 1 8; do for d in gpu cpu; do
  n=e2e_b${bt}_${d}_$r
  DLR_CACHE_DIR=/tmp/c timeout 60 "$B/dlrun" "$y" $W --list $L --device cuda --precision fp16 --width 608 --height 608 \
    --batch $bt --decode $d --summary always >$O/$n.out 2>$O/$n.err; echo "$n rc=$? $(grep summary $O/$n.err | head -2 | cut -c1-100 | tr '\n' ' ')"
done; done; done
cmp <(sort $O/e2e_b8_gpu_1.out) <(sort $O/e2e_b8_cpu_1.out) && echo "b8 detections: same text both ways"
cmp $O/e2e_b1_gpu_1.out $O/e2e_b1_cpu_1.out && echo "b1 detections: same text both ways"
echo "e2e done at ${SECONDS}s"
b() { local n=$1 t=$2; shift 2; DLR_CACHE_DIR=/tmp/cb timeout $t "$B/dlbench" "$y" --weights $W --size 608 "$@" \
  --isolate --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; grep -E '^cuda' "$O/$n.txt" | cut -c1-110; }
for r in 1 2; do
  b pre_$r 60 --precision fp16 --decode gpu,cpu --iters 300 --warmup 30 --detect 300
  b b8_$r 60 --precision fp16 --batch 8 --decode gpu,cpu --iters 60 --warmup 10 --detect 60
done
b int8 90 --precision fp16 --mode preload,stream --weight-budget min --weight-format int8 --staging-early on,off --iters 300 --warmup 30
b fp16min 90 --precision fp16 --mode stream --weight-budget min,50% --staging-early on,off --iters 300 --warmup 30
echo "rows done at ${SECONDS}s"
left=$((540 - SECONDS)); [ $left -gt 60 ] && b fp32_8m $left --precision fp32 --mode preload,stream --weight-budget 8MiB --iters 60 --warmup 5
echo "all done at ${SECONDS}s"
