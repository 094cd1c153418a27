#!/usr/bin/env bash
# Call 2 (prepared 2026-12-05): issues 30 and 35's rows after the output downloads moved
# (twenty-second session) and with this build, each row its own process:
# 1. issue 30: fp16 at 1 and 2 MiB slots (pools of 2 and 4 MiB) against the copy floor at
#    the slot's size; from storage with 2 MiB channel slots (cold) against the disk floor;
#    four models at 30 % (max-slowdown, 1 MiB auto slots);
# 2. issue 35: 2,000 frames alone in every mode (scripts/interference.sh).
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"; M=$S/models
nvidia-smi -L | tee "$O/gpu.txt"
y="$M/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
b() { local n=$1 t=$2; shift 2; DLR_CACHE_DIR=/tmp/cb timeout $t "$B/dlbench" "$y" --weights $W --size 608 "$@" \
  --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; grep -E '^cuda|floor' "$O/$n.txt" | cut -c1-140 | head -8; }
b fp16_slots 150 --precision fp16 --mode preload,stream --weight-budget min --slot-size 0,1MiB,2MiB --isolate --iters 100 --warmup 10
for slot in 0 2MiB; do
  b storage_$slot 100 --precision fp16 --mode stream --weight-budget min --weights-from storage --slot-size $slot \
    --slice-by channels --cold --iters 20 --warmup 2
done
SW="$S/weights"
MODELS="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416"
timeout 200 "$B/dlbench" --models "$MODELS" --runtime-budget 30% --slot-size 1MiB --slice-by auto --split max-slowdown \
  --concurrent 200 --json "$O/models.json" >"$O/models.txt" 2>&1
echo "models rc=$? at ${SECONDS}s"; grep -A8 '^model ' "$O/models.txt" | head -12
left=$((560 - SECONDS)); [ $left -gt 60 ] || exit 0
mkdir -p device-carry/bin && cp $B/* device-carry/bin/
CONDITIONS=alone timeout $left bash scripts/interference.sh $O/interference >$O/interference.txt 2>&1
echo "interference rc=$? at ${SECONDS}s"; tail -14 $O/interference.txt
