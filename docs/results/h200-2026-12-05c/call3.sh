#!/usr/bin/env bash
# Call 3 (twenty-seventh session), two builds: base = main at e641bda (bin.tar.xz); nb =
# base + the reader polling the staging gate while its oldest request is in flight
# (BlockReader::wait_for; nb.tar.xz). Issue 30's storage rows with at most 8 MiB of
# weight memory: call 2 found them far slower than the disk with the same bytes in
# flight; base's reader, blocked on its oldest request, sees staging come free only when
# that request lands. Rows, each its own dlbench process, 2 interleaved rounds after one
# that makes the prepared files, with the disk's own passes at depth 4 and 8 x 1 MiB:
#   s2 = 2 MiB slots, --host-budget 4MiB (4 + 4 MiB): base and nb with 1 MiB requests,
#        base with 256 KiB requests;
#   s3 = 1 MiB slots, --host-budget 6MiB (2 + 6 MiB): base and nb;
#   s1 = 1 MiB slots, the minimal staging (2 + 2 MiB): base and nb.
# Then nb's GPU tests of the storage paths.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/base /tmp/nb; tar xJf device-carry/bin.tar.xz -C /tmp/base; tar xJf device-carry/nb.tar.xz -C /tmp/nb
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/nb/bin/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/c_st
row() { local v=$1 n=$2 slot=$3 host=$4; shift 4
  timeout 60 /tmp/$v/bin/dlbench "$y" --weights $W --size 608 --precision fp16 --mode stream --weight-budget min \
  --weights-from storage --slot-size "$slot" --host-budget "$host" --slice-by channels --cold --iters 20 --warmup 2 "$@" \
  --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s: $(grep -E '^cuda' "$O/$n.txt" | cut -c42-60) $(grep -oE 'last read landed at [0-9.]+ ms' "$O/$n.txt")"; }
newest() { find $DLR_CACHE_DIR/prepared -name 'yolov4-*.dlrw' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2; }
disk() { timeout 30 /tmp/nb/bin/dlprobe --storage-only --storage-file "$1" --storage-passes 20 --read-depth "$2" \
  --read-block "$3" --json "$O/$4.json" >"$O/$4.txt" 2>&1; echo "$4 $(grep -E '^ +p50' "$O/$4.txt")"; }
row base s1_0 1MiB min; row base s2_0 2MiB 4MiB; f2=$(newest); echo "file: $f2"
for r in 1 2; do
  disk "$f2" 4 1MiB d4b1_$r
  for v in base nb; do row $v s2_${v}_$r 2MiB 4MiB; done
  row base s2_base_b256K_$r 2MiB 4MiB --read-block 256KiB
  for v in base nb; do row $v s3_${v}_$r 1MiB 6MiB; done
  for v in base nb; do row $v s1_${v}_$r 1MiB min; done
  disk "$f2" 8 1MiB d8b1_$r
done
unset DLR_CACHE_DIR
timeout 120 /tmp/nb/bin/dlr_gpu_tests --gtest_filter='StorageMode.*:HostWait.*:Int8Gpu.Streamed*:PinnedStaging.*' \
  >"$O/gpu_tests.log" 2>&1
echo "gpu tests rc=$? at ${SECONDS}s: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test' "$O/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$O/gpu_tests.log" | head
