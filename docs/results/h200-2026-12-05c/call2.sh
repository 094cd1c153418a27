#!/usr/bin/env bash
# Call 2 (twenty-seventh session; main's build at e641bda, device-carry/bin.tar.xz):
# 1. issue 30's storage rows with at most 8 MiB of weight memory, each against the disk's
#    own passes over its prepared file with the same bytes in flight as its staging
#    allows (s1: 1 MiB channel slots, 2 MiB staging -> depth 2 x 1 MiB; s2: 2 MiB slots,
#    --host-budget 4MiB -> depth 4 x 1 MiB or 2 x 2 MiB) and at dlrun's default depth
#    (8 x 1 MiB), in 4 interleaved rounds after one that makes the prepared files; s3:
#    1 MiB slots with --host-budget 6MiB (2 + 6 MiB) against depth 6 x 1 MiB; and the
#    same 4 MiB in flight as 8 x 512 KiB;
# 2. issue 33's row (int8 at the minimum pool) beside the fp16 preload, two rounds, with
#    the planner's other choices given by hand (staged copies late; equal ring chunks of
#    1, 2, 3 MiB), and one profiled run (--report table: the copy engine's busy time
#    beside the kernels);
# 3. the GPU tests of the storage, stream, int8 and sliced paths (the code the
#    twenty-sixth session changed last).
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
tar xJf device-carry/bin.tar.xz -C /tmp; B=/tmp/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $B/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/c_st
row() { timeout 60 $B/dlbench "$y" --weights $W --size 608 --precision fp16 --mode stream --weight-budget min \
  --weights-from storage --slot-size "$1" --host-budget "$3" --slice-by channels --cold --iters 20 --warmup 2 \
  --json "$O/$2.json" >"$O/$2.txt" 2>&1
  echo "$2 rc=$? at ${SECONDS}s: $(grep -E '^cuda' "$O/$2.txt" | cut -c42-60) $(grep -oE 'last read landed at [0-9.]+ ms' "$O/$2.txt")"; }
newest() { find $DLR_CACHE_DIR/prepared -name 'yolov4-*.dlrw' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2; }
disk() { timeout 30 $B/dlprobe --storage-only --storage-file "$1" --storage-passes 20 --read-depth "$2" --read-block "$3" \
  --json "$O/$4.json" >"$O/$4.txt" 2>&1; echo "$4 $(grep -E '^ +p50' "$O/$4.txt")"; }
row 1MiB s1_0 min; f1=$(newest); row 1MiB s3_0 6MiB; row 2MiB s2_0 4MiB; f2=$(newest); echo "files: $f1 $f2"
for r in 1 2 3 4; do
  disk "$f2" 4 1MiB d4b1_$r; disk "$f2" 2 2MiB d2b2_$r; disk "$f2" 8 512KiB d8b512_$r; row 2MiB s2_$r 4MiB
  disk "$f1" 2 1MiB d2b1_$r; row 1MiB s1_$r min; disk "$f1" 6 1MiB d6b1_$r; row 1MiB s3_$r 6MiB
  disk "$f2" 8 1MiB d8b1_$r
done
unset DLR_CACHE_DIR
# 2. issue 33's row, profiled
export DLR_CACHE_DIR=/tmp/c_i8
b() { local n=$1; shift; timeout 60 $B/dlbench "$y" --size 608 --weights $W "$@" --cache --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s: $(grep -A1 '^config' "$O/$n.txt" | tail -1 | cut -c30-200)"; }
i8=(--precision fp16 --mode stream --weight-budget min --weight-format int8)
b fill_i8 "${i8[@]}" --iters 3 --warmup 1; b fp16 --precision fp16 --iters 300 --warmup 30
for r in 1 2; do
  b i8min_$r "${i8[@]}" --iters 300 --warmup 30; b i8early_off_$r "${i8[@]}" --staging-early off --iters 300 --warmup 30
  for c in 1 2 3; do b i8c${c}_$r "${i8[@]}" --units chunks:${c}MiB --iters 300 --warmup 30; done
done
b report_i8min "${i8[@]}" --iters 50 --warmup 10 --report table
grep -E 'stream: stall' "$O/report_i8min.txt"
unset DLR_CACHE_DIR
# 3. GPU tests
timeout 200 $B/dlr_gpu_tests --gtest_filter='StorageMode.*:StreamMode.*:Int8Gpu.*:*Sliced*:HostWait.*:PinnedStaging.*' >"$O/gpu_tests.log" 2>&1
echo "gpu tests rc=$? at ${SECONDS}s: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test|tests? SKIPPED|^\[  SKIPPED \] [0-9]' "$O/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$O/gpu_tests.log" | head -20
