#!/usr/bin/env bash
# Forty-fourth session, call 3 (build h30): int8 at 10 and 12 MiB with the expansion stage
# on and off beside the fp16 preload (yolov4 @608, every row its own process after a
# filling run, two rounds), then the whole GPU suite in the time left (LIMIT s in all).
set -u
O=/tmp/o3; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/call3.tgz" -C /tmp o3; }; trap fin EXIT
v=${V:?name the build}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }
X=/tmp/$v/bin; nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/c3
b() { local n=$1 it=$2; shift 2
  timeout 120 $X/dlbench "$y" --weights $W --size 608 --cache --iters $it --warmup 5 "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s $(grep -E '^cuda' "$O/$n.txt" | head -1 | cut -c1-260)"; }
i8="--precision fp16 --mode stream --weight-format int8"
rows=(
  "pre16 --precision fp16 --mode preload"
  "i8_10 $i8 --weight-budget 10MiB"
  "i8_10_inline $i8 --weight-budget 10MiB --expansion-stage off"
  "i8_12 $i8 --weight-budget 12MiB"
  "i8_12_inline $i8 --weight-budget 12MiB --expansion-stage off"
)
for r in "${rows[@]}"; do set -- $r; n=$1; shift; b fill_$n 3 "$@"; done; fin
for round in 1 2; do
  for r in "${rows[@]}"; do set -- $r; n=$1; shift; b ${n}_$round 60 "$@"; done; fin
done
left=$((${LIMIT:-560} - SECONDS)); [ $left -gt 20 ] || { echo "no time left for the suite"; exit 0; }
(cd $X && timeout $left ./dlr_gpu_tests > $O/suite.log 2>&1; echo "suite rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure' $O/suite.log | cut -c1-220 | head -30
gzip -f $O/suite.log
echo "end at ${SECONDS}s"
