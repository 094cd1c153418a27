#!/usr/bin/env bash
# Thirty-fourth session, call 4 (GPU-d9edccdf, build h13): the 3xTF32 forms and times the engine measures at open for
# each conv configuration (DLR_LOG_LEVEL=debug), whole (fp32 NHWC preload) and in 4 MiB
# channel slices, on a fresh cache; build h13.
set -u
O=/tmp/o4; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o4; }; trap fin EXIT
v=${V:-h13}; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
for n in pre pres4; do
  extra=""; [ $n = pres4 ] && extra="--slot-size 4MiB"
  DLR_CACHE_DIR=/tmp/cf_$n DLR_LOG_LEVEL=debug timeout 150 $X/dlbench "$y" --weights $W --size 608 --cache --iters 30 --warmup 5 \
    --precision fp32 --layout nhwc --mode preload $extra --json $O/$n.json > $O/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s $(grep -E '^cuda' $O/$n.txt | awk '{print $2}')"
  DLR_CACHE_DIR=/tmp/cf_$n timeout 100 $X/dlbench "$y" --weights $W --size 608 --cache --iters 30 --warmup 5 \
    --precision fp32 --layout nhwc --mode preload $extra --report table --json $O/prof_$n.json > $O/prof_$n.txt 2>&1
  echo "prof_$n rc=$? at ${SECONDS}s $(grep -E '^cuda' $O/prof_$n.txt | head -1 | awk '{print $2}')"
done
grep -c "3xTF32" $O/pres4.txt
# Issue 33: int8 at the 8 MiB pool with its 4.5 MiB blobs cut in two, so that a ring unit
# may pass 3.5 MiB (ring_max_unit); beside the minimum as it is and the fp16 preload.
export DLR_CACHE_DIR=/tmp/cf8
b() { local n=$1 it=$2; shift 2
  timeout 120 $X/dlbench "$y" --weights $W --size 608 --cache --iters $it --warmup 5 "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s $(grep -E '^cuda' "$O/$n.txt" | head -1 | awk '{print $2}')"; }
rows=(
  "pre16 --precision fp16 --mode preload"
  "mini8 --precision fp16 --mode stream --weight-budget min --weight-format int8"
  "i8s25 --precision fp16 --mode stream --weight-budget 8MiB --slot-size 2.5MiB --weight-format int8"
  "i8s3 --precision fp16 --mode stream --weight-budget 8MiB --slot-size 3MiB --weight-format int8"
  "i8s4 --precision fp16 --mode stream --weight-budget 8MiB --slot-size 4MiB --weight-format int8"
)
for r in "${rows[@]}"; do set -- $r; n=$1; shift; b fill_$n 3 "$@"; done
for round in 1 2; do
  for r in "${rows[@]}"; do set -- $r; n=$1; shift; b ${n}_$round 60 "$@"; done
done
grep -h "^cuda" $O/i8s*_1.txt $O/mini8_1.txt
echo "end at ${SECONDS}s"
