#!/usr/bin/env bash
# Call 2 (after call 1 measured no gain from the tail, and its tests found no dog.ppm):
# 1. the streamed GPU tests with the images as PPM (this build has no OpenCV);
# 2. the tail's copy timeline: dlrun over 8 frames, --report json, at the minimum pool and
#    at 50 %, tail off and on (each frame's copies, kernels and the tail's copies);
# 3. wip/x3-sharing (bin-x3) against main (bin): the tests it touches, strict fp32 exec to
#    exit and --startup parts, the fp32 latency row;
# 4. issue 35: storage and zero copy alone, 500 frames each (scripts/interference.sh).
# Needs device-carry/bin.tar.xz (main, with dlprobe) and bin-x3.tar.xz.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb /tmp/xb && tar xJf device-carry/bin.tar.xz -C /tmp/nb && tar xJf device-carry/bin-x3.tar.xz -C /tmp/xb
B=/tmp/nb/bin; X=/tmp/xb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
timeout 200 "$B/dlr_gpu_tests" --gtest_filter='StreamMode.*:CudaEngine.RepeatedRuns*:RuntimeGpu.*:Int8Gpu.*' \
  >"$O/tests.log" 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED)|Failure' "$O/tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
L=/tmp/l8.txt; for _ in 1 2 3 4 5 6 7 8; do echo "$S/images/dog.ppm"; done > $L
for bud in min 50%; do
  for t in off on; do
    n=rep_${bud%\%}_$t
    DLR_CACHE_DIR=/tmp/c timeout 60 "$B/dlrun" "$y" $W --list $L --device cuda --precision fp16 --mode stream \
      --weight-budget $bud --tail-prefetch $t --report json --report-file $O/$n.json --summary always \
      >$O/$n.out 2>$O/$n.err; echo "$n rc=$?"
  done
done
echo "tail done at ${SECONDS}s"
timeout 150 "$X/dlr_gpu_tests" --gtest_filter='Tf32x3*:AlgoChoiceGpu.*:Conv*:Models/CudaEngineE2E.*yolov4_tiny' >"$O/x3tests.log" 2>&1
echo "x3 tests rc=$?"; grep -E '^\[  (PASSED|FAILED)|Failure' "$O/x3tests.log" | head -10
run() { local bin=$1 c=$2; local t0=$(date +%s%N); DLR_CACHE_DIR=$c timeout 60 "$bin/dlrun" "$y" $W "$S/images/dog.ppm" --device cuda --precision fp32 >/dev/null 2>$O/err.txt; local rc=$?; echo $(( ($(date +%s%N) - t0) / 1000000 )) $rc; }
echo "round x3 main" > $O/startup.txt
run $X /tmp/cx >/dev/null; run $B /tmp/cm >/dev/null
for r in 1 2 3 4 5; do echo "$r $(run $X /tmp/cx) $(run $B /tmp/cm)" >> $O/startup.txt; done
cat $O/startup.txt
b() { local bin=$1 n=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 90 "$bin/dlbench" "$@" --cache --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
Y="$y --size 608 --weights $W --precision fp32"
b $X su_x3 /tmp/cx $Y --startup 3
b $B su_main /tmp/cm $Y --startup 3
grep -h -A2 'preload/fp32' $O/su_x3.txt $O/su_main.txt
for r in 1 2; do b $X x3_fp32_$r /tmp/cx $Y --iters 200 --warmup 20; b $B main_fp32_$r /tmp/cm $Y --iters 200 --warmup 20; done
for f in x3_fp32_1 main_fp32_1 x3_fp32_2 main_fp32_2; do echo "$f: $(grep -A1 '^config' $O/$f.txt | tail -1)"; done
echo "x3 done at ${SECONDS}s"
left=$((560 - SECONDS)); [ $left -gt 60 ] || exit 0
mkdir -p device-carry/bin && cp $B/* device-carry/bin/
MODES="storage zero-copy" CONDITIONS=alone N_SLOW=500 timeout $left bash scripts/interference.sh $O/interference >$O/interference.txt 2>&1
echo "interference rc=$? at ${SECONDS}s"; tail -12 $O/interference.txt
