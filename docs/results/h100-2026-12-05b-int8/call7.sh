#!/usr/bin/env bash
# Call 7 (twenty-sixth session), main's build at 39aa636 (bin.tar.xz):
# 1. the int8 and streamed-engine GPU tests (Int8Gpu.*, StreamMode.*);
# 2. issue 35's storage and zero-copy rows alone against the disk's own pass, in 8
#    interleaved rounds (scripts/interference.sh ROUNDS=8: 80 disk passes, 80 storage
#    frames, 80 zero-copy frames per round, 640 of each in all), so that the three see the
#    same drift of the disk.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
nvidia-smi -L | tee "$O/gpu.txt"
mkdir -p device-carry/bin && tar xJf device-carry/bin.tar.xz -C /tmp && cp /tmp/bin/* device-carry/bin/
export DLR_SHARED_DIR="$PWD/device-carry/shared"
timeout 100 device-carry/bin/dlr_gpu_tests --gtest_filter='Int8Gpu.*:StreamMode.*' >"$O/tests.log" 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED)|Failure|^\[  FAILED' "$O/tests.log" | head
CONDITIONS=alone MODES="storage zero-copy" ROUNDS=8 N_SLOW=640 DISK_PASSES=640 timeout $((390 - SECONDS)) \
  bash scripts/interference.sh $O/interference >$O/interference.txt 2>&1
echo "interference rc=$? at ${SECONDS}s"; tail -12 $O/interference.txt
# Keep only the latencies of the rows (their detections are megabytes).
for f in $O/interference/lat_*.txt; do grep -o 'Predicted in [0-9.]*' "$f" | awk '{print $3}' >"${f%.txt}.ms"; rm "$f"; done
