#!/usr/bin/env bash
# Output downloads under the later layers (runtime/cuda/cuda_engine_outputs.cpp): the
# engine-level GPU tests of the new build, then base (bin: 2f9764e, every download after
# the last layer) against new (bin-new), each row its own dlbench process, alternating,
# two rounds: yolov4 @608 preload fp16 / fp32 / tf32 / fp16 batch 8, streamed fp16 at min
# and 50 %, yolov4-tiny @416 fp16; then new at min with the tail on.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/pb /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/pb && tar xJf device-carry/bin-new.tar.xz -C /tmp/nb
PB=/tmp/pb/bin; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
F='StreamMode.*:CudaEngine.*:StorageMode.*:CudaErrors.*:MultiSession.*:FusionGpu.*:HostWait.*:Int8Gpu.*:RuntimeGpu.*'
F="$F:StreamPrefetch.*:SlicedGpuAuto.*:Models/CudaEngineE2E.*:Axes/SlicedGpu.*"
timeout 150 "$B/dlr_gpu_tests" --gtest_filter="$F" >"$O/tests.log" 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED)|Failure|tests ran' "$O/tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights; "$B/dlgen" "$t" $WT >/dev/null
b() { local bin=$1 n=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 60 "$bin/dlbench" "$@" --cache --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
Y="$y --size 608 --weights $W"
rows() {  # $1 round; $2: all rows (else the fp16 ones)
  for v in base new; do
    bin=$B; c=/tmp/cn; [ $v = base ] && bin=$PB && c=/tmp/cb
    b $bin pre16_${v}_$1 $c $Y --precision fp16 --iters 300 --warmup 30
    b $bin smin_${v}_$1 $c $Y --precision fp16 --mode stream --weight-budget min --iters 300 --warmup 30
    b $bin s50_${v}_$1 $c $Y --precision fp16 --mode stream --weight-budget 50% --iters 300 --warmup 30
    [ $2 = all ] || continue
    b $bin pre32_${v}_$1 $c $Y --precision fp32 --iters 100 --warmup 10
    b $bin tf32_${v}_$1 $c $Y --precision tf32 --iters 200 --warmup 20
    b $bin b8_${v}_$1 $c $Y --precision fp16 --batch 8 --iters 60 --warmup 10
    b $bin tiny_${v}_$1 $c $t --size 416 --weights $WT --precision fp16 --iters 500 --warmup 50
  done
}
rows 1 all; echo "round 1 at ${SECONDS}s"
rows 2 fp16; echo "round 2 at ${SECONDS}s"
b $B smin_tail_new /tmp/cn $Y --precision fp16 --mode stream --weight-budget min,50% --tail-prefetch off,on --iters 300 --warmup 30
echo "benchmarks done at ${SECONDS}s"
left=$((430 - SECONDS)); [ $left -gt 30 ] && timeout $left "$B/dlr_gpu_tests" \
  --gtest_filter='Issue9Models/CudaEngineE2E.*:Modes/DeviceFaults.*' >"$O/tests2.log" 2>&1
echo "tests2 rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED)|Failure|tests ran' "$O/tests2.log" | head -20
for f in $O/*_[12].txt $O/smin_tail_new.txt; do [ -f $f ] && echo "$(basename $f .txt): $(grep -A4 '^config' $f | tail -n +2 | cut -c1-120 | tr '\n' '|')"; done
