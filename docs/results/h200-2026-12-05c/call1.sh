#!/usr/bin/env bash
# Call 1 (twenty-seventh session), two builds on one card:
#   base = main at e641bda;
#   nb   = base + the staging pass's ring chunks capped at the ring's largest unit
#          (x2 and x4 of the default unit were dropped when above it).
# 1. issue 33's row: fp16 preload (nb), int8 stream at the minimum pool (base, nb), every
#    row its own dlbench process with its own build's kernel cache (filled first), two
#    rounds; one profiled run of nb's row (--report table: copy rate while busy, stall);
# 2. issue 30's storage rows with at most 8 MiB of weight memory (nb: 1 MiB channel slots,
#    2 + 2 MiB; 2 MiB slots with --host-budget 4MiB, 4 + 4 MiB), interleaved with the
#    disk's own pass of the same prepared file, 4 rounds;
# 3. issue 30's four models at 30 % (nb), slots of 1 MiB (call 2's row), 2 MiB and 4 MiB.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in base nb; do mkdir -p /tmp/$v && tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"; M=$S/models
y="$M/yolov4.cfg"; W=/tmp/y4.weights; /tmp/nb/bin/dlgen "$y" $W >/dev/null
b() { local v=$1 n=$2; shift 2; DLR_CACHE_DIR=/tmp/c_$v timeout 60 /tmp/$v/bin/dlbench "$y" --size 608 --weights $W "$@" \
  --cache --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$? at ${SECONDS}s: $(grep -A1 '^config' "$O/$n.txt" | tail -1 | cut -c30-250)"; }
i8=(--precision fp16 --mode stream --weight-budget min --weight-format int8)
for v in base nb; do b $v fill_$v "${i8[@]}" --iters 3 --warmup 1; done
b nb fill16 --precision fp16 --iters 3 --warmup 1
for r in 1 2; do
  b nb fp16_$r --precision fp16 --iters 300 --warmup 30
  for v in base nb; do b $v ${v}_i8min_$r "${i8[@]}" --iters 300 --warmup 30; done
done
b nb report_i8min "${i8[@]}" --iters 50 --warmup 10 --report table
grep -E 'stream: stall' "$O/report_i8min.txt"
# 2. storage rows, interleaved with the disk
export DLR_CACHE_DIR=/tmp/c_st
row() { timeout 60 /tmp/nb/bin/dlbench "$y" --weights $W --size 608 --precision fp16 --mode stream --weight-budget min \
  --weights-from storage --slot-size $1 --host-budget $3 --slice-by channels --cold --iters 20 --warmup 2 \
  --json "$O/$2.json" >"$O/$2.txt" 2>&1
  echo "$2 rc=$? at ${SECONDS}s: $(grep -E '^cuda' "$O/$2.txt" | cut -c1-200)"; }
for r in 1 2 3 4; do
  f=$(ls -t $DLR_CACHE_DIR/prepared/yolov4-*.dlrw 2>/dev/null | head -1)
  [ -n "$f" ] && timeout 30 /tmp/nb/bin/dlprobe --storage-only --storage-file "$f" --storage-passes 20 --json "$O/disk_$r.json" \
    >"$O/disk_$r.txt" 2>&1 && echo "disk_$r $(grep -E '^ +p50' "$O/disk_$r.txt")"
  row 1MiB s1_$r min; row 2MiB s2_$r 4MiB
done
unset DLR_CACHE_DIR
# 3. four models at 30 %
SW="$S/weights"
MODELS="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416"
for s in 1MiB 2MiB 4MiB; do
  timeout 100 /tmp/nb/bin/dlbench --models "$MODELS" --runtime-budget 30% --slot-size $s --slice-by auto --split max-slowdown \
    --json "$O/models_$s.json" >"$O/models_$s.txt" 2>&1
  echo "models_$s rc=$? at ${SECONDS}s"; grep -A5 '^model  ' "$O/models_$s.txt" | head -6; grep '^device memory' "$O/models_$s.txt"
done
