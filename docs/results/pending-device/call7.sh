#!/usr/bin/env bash
# Call 7 (twenty-sixth session): issue 35's storage and zero-copy rows alone against the
# disk's own pass, in 8 interleaved rounds (scripts/interference.sh ROUNDS=8: 100 disk
# passes, 100 storage frames, 100 zero-copy frames per round, 800 of each in all), so
# that the three see the same drift of the disk.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
nvidia-smi -L | tee "$O/gpu.txt"
mkdir -p device-carry/bin && tar xJf device-carry/bin.tar.xz -C /tmp && cp /tmp/bin/* device-carry/bin/
export DLR_SHARED_DIR="$PWD/device-carry/shared"
CONDITIONS=alone MODES="storage zero-copy" ROUNDS=8 N_SLOW=800 DISK_PASSES=800 timeout $((370 - SECONDS)) \
  bash scripts/interference.sh $O/interference >$O/interference.txt 2>&1
echo "interference rc=$? at ${SECONDS}s"; tail -12 $O/interference.txt
