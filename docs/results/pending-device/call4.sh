#!/usr/bin/env bash
# Call 4 (twenty-seventh session), nb = main + the reader polling the staging gate
# (nb.tar.xz, as call 3): issue 30's storage rows within 8 MiB split differently between
# the device pool and the host staging, each its own dlbench process, 2 interleaved
# rounds with the disk's own pass (8 x 1 MiB):
#   s3  = 1 MiB slots + 6 MiB staging (call 3's best);
#   s3h = the same with 512 KiB requests;
#   s4  = 512 KiB slots + 7 MiB staging;
#   s5  = 1 MiB slots + 5 MiB staging (7 MiB in all);
#   s2c = 2 MiB slots + 4 MiB staging with 1 MiB units (--units chunks:1MiB): four units
#         in the staging instead of two.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb; tar xJf device-carry/nb.tar.xz -C /tmp/nb; B=/tmp/nb/bin  # a device build of 09a5c3f or later
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $B/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/c_st
row() { local n=$1 slot=$2 host=$3; shift 3
  timeout 60 $B/dlbench "$y" --weights $W --size 608 --precision fp16 --mode stream --weight-budget min \
  --weights-from storage --slot-size "$slot" --host-budget "$host" --slice-by channels --cold --iters 20 --warmup 2 "$@" \
  --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s: $(grep -E '^cuda' "$O/$n.txt" | cut -c42-60) $(grep -oE 'last read landed at [0-9.]+ ms' "$O/$n.txt")"; }
newest() { find $DLR_CACHE_DIR/prepared -name 'yolov4-*.dlrw' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2; }
disk() { timeout 30 $B/dlprobe --storage-only --storage-file "$1" --storage-passes 20 --read-depth "$2" \
  --read-block "$3" --json "$O/$4.json" >"$O/$4.txt" 2>&1; echo "$4 $(grep -E '^ +p50' "$O/$4.txt")"; }
row s4_0 512KiB 7MiB; row s3_0 1MiB 6MiB; f=$(newest); echo "file: $f"
for r in 1 2; do
  disk "$f" 8 1MiB d8b1_$r
  row s3_$r 1MiB 6MiB; row s3h_$r 1MiB 6MiB --read-block 512KiB; row s4_$r 512KiB 7MiB; row s5_$r 1MiB 5MiB
  row s2c_$r 2MiB 4MiB --units chunks:1MiB
done
disk "$f" 8 1MiB d8b1_3
