#!/usr/bin/env bash
# Thirty-fifth session, call 1: layers staged whole (--stage-whole, build h16) on issue 30's
# rows, yolov4 @608: strict fp32 NHWC in 8 MiB, and fp16 at the minimum pool with 1 and 2 MiB
# slots (2 and 4 MiB pools), each with --stage-whole on and off (off: every layer above the
# slot sliced, as before) beside its preload. Every row its own process (dlbench, 60
# inferences after 5), caches filled first, two rounds interleaved; one profiled run of the
# fp32 row; then the GPU tests of the change.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
v=${V:-h16}; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/cf
b() { local n=$1 it=$2; shift 2
  timeout 120 $X/dlbench "$y" --weights $W --size 608 --cache --iters $it --warmup 5 "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s $(grep -E '^cuda' "$O/$n.txt" | awk '{print $2}' | tr '\n' ' ')"; }
rows=(
  "pre32 --precision fp32 --layout nhwc --mode preload"
  "st8_on --precision fp32 --layout nhwc --mode stream --weight-budget 8MiB --stage-whole on"
  "st8_off --precision fp32 --layout nhwc --mode stream --weight-budget 8MiB --stage-whole off"
  "pre16 --precision fp16 --mode preload"
  "s1_on --precision fp16 --mode stream --weight-budget min --slot-size 1MiB --stage-whole on"
  "s1_off --precision fp16 --mode stream --weight-budget min --slot-size 1MiB --stage-whole off"
  "s2_on --precision fp16 --mode stream --weight-budget min --slot-size 2MiB --stage-whole on"
  "s2_off --precision fp16 --mode stream --weight-budget min --slot-size 2MiB --stage-whole off"
)
for r in "${rows[@]}"; do set -- $r; n=$1; shift; b fill_$n 3 "$@"; done
for round in 1 2; do
  for r in "${rows[@]}"; do set -- $r; n=$1; shift; b ${n}_$round 60 "$@"; done
done
for n in st8_on; do
  for r in "${rows[@]}"; do set -- $r; [ "$1" = "$n" ] && { shift; b prof_$n 10 "$@" --report table; }; done
done
grep -h '^cuda/stream' $O/st8_on_1.txt $O/s1_on_1.txt $O/s2_on_1.txt
(cd $X && timeout 200 ./dlr_gpu_tests --gtest_filter='WholeStagingGpu.*:Axes/SlicedGpu.*:SlicedGpuAuto.*:StreamMode.*:Tf32x3Test.*' > $O/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED) |^\[  FAILED|tests ran|yolov4 @416' $O/tests.log
echo "end at ${SECONDS}s"
