#!/usr/bin/env bash
# Call 8 (twenty-sixth session; needs a device build of main at or after the commit that
# caps the copy units to the host budget): issue 30's storage rows with at most 8 MiB of
# weight memory (1 MiB channel slots: 2 MiB pool + 2 MiB staging; 2 MiB slots with
# --host-budget 4MiB: 4 + 4 MiB) against the disk's own pass of the same prepared file,
# in 4 interleaved rounds (disk, 1 MiB row, 2 MiB row), so that all see the same minutes.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
nvidia-smi -L | tee "$O/gpu.txt"
tar xJf device-carry/bin.tar.xz -C /tmp; B=/tmp/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S" DLR_CACHE_DIR=/tmp/c8
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
row() { timeout 60 "$B/dlbench" "$y" --weights $W --size 608 --precision fp16 --mode stream --weight-budget min \
  --weights-from storage --slot-size $1 --host-budget $3 --slice-by channels --cold --iters 20 --warmup 2 \
  --json "$O/$2.json" >"$O/$2.txt" 2>&1
  echo "$2 rc=$? $(grep -E '^cuda' "$O/$2.txt" | cut -c1-140)"; }
for r in 1 2 3 4; do
  f=$(ls -t $DLR_CACHE_DIR/prepared/yolov4-*.dlrw 2>/dev/null | head -1)
  [ -n "$f" ] && timeout 30 "$B/dlprobe" --storage-only --storage-file "$f" --storage-passes 20 --json "$O/disk_$r.json" \
    >"$O/disk_$r.txt" 2>&1 && echo "disk_$r $(grep -E '^ +p50' "$O/disk_$r.txt")"
  row 1MiB s1_$r min; row 2MiB s2_$r 4MiB
  [ $SECONDS -gt 150 ] && break
done
