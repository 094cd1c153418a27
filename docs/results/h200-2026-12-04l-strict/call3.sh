#!/usr/bin/env bash
# The GPU suite on the final code (the three tests call 2 could not run lacked the
# decoded images: converted here with python's cv2), and fp32 preload once more.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"; ls "$S/images"
mkdir -p /tmp/pb && tar xJf device-carry/bin-prev.tar.xz -C /tmp/pb; PB=/tmp/pb/bin
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
b() { local bin=$1 n=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 60 "$bin/dlbench" "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
P="--size 608 --precision fp32 --cache --weights $W"
b $B first /tmp/cn "$y" $P --iters 3 --warmup 1
b $PB pwarm /tmp/cp "$y" $P --iters 3 --warmup 1
for r in 1 2; do  # fp32 streamed at 8 MiB, new and base interleaved (call 2 had one of each)
  b $B s8n$r /tmp/cn "$y" $P --mode stream --weight-budget 8MiB --iters 150 --warmup 20
  b $PB s8b$r /tmp/cp "$y" $P --mode stream --weight-budget 8MiB --iters 150 --warmup 20
done
for f in s8n1 s8b1 s8n2 s8b2; do echo "$f: $(grep -A1 '^config' $O/$f.txt | tail -1)"; done
timeout 420 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*:ConvAlgoBench.*:FusedConvTest.MatchesTheCpuReference:FusedConvTest.Tf32MatchesTheCpuReference' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|strict fp32|tests ran' "$O/tests.log" | head -30
