#!/usr/bin/env bash
# Start-up of strict fp32 preload (dlrun exec to exit with one detection, caches warm),
# base (85a5469, NCHW) against this build (NHWC + 3xTF32, the forced chunk convs'
# workspace sizes kept in the process), alternating; dlbench --startup's parts; then the
# whole GPU suite on this build.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb /tmp/pb && tar xJf device-carry/bin.tar.xz -C /tmp/nb && tar xJf device-carry/bin-base.tar.xz -C /tmp/pb
B=/tmp/nb/bin; PB=/tmp/pb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
run() { local bin=$1 c=$2; local t0=$(date +%s%N); DLR_CACHE_DIR=$c timeout 60 "$bin/dlrun" "$y" $W "$S/images/dog.ppm" --device cuda --precision fp32 >/dev/null 2>$O/err.txt; local rc=$?; echo $(( ($(date +%s%N) - t0) / 1000000 )) $rc; }
echo "round new base" > $O/startup.txt
run $B /tmp/cn >/dev/null; run $PB /tmp/cp >/dev/null
for r in 1 2 3 4 5 6; do echo "$r $(run $B /tmp/cn) $(run $PB /tmp/cp)" >> $O/startup.txt; done
cat $O/startup.txt
DLR_CACHE_DIR=/tmp/cn timeout 60 "$B/dlbench" "$y" --size 608 --weights $W --precision fp32 --cache --startup 3 >$O/su_new.txt 2>&1
DLR_CACHE_DIR=/tmp/cp timeout 60 "$PB/dlbench" "$y" --size 608 --weights $W --precision fp32 --cache --startup 3 >$O/su_base.txt 2>&1
grep -h 'startup:' $O/su_new.txt $O/su_base.txt
timeout 470 "$B/dlr_gpu_tests" >"$O/suite.log" 2>&1
echo "suite rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure' "$O/suite.log" | head -30; tail -3 "$O/suite.log"
