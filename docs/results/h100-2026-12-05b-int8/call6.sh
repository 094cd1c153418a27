#!/usr/bin/env bash
# Call 6 (twenty-sixth session): 1. H2D copy throughput on one copy stream against two and
# three (device-carry/scratch/h2d2: 128 MiB in copies of 1-8 MiB, idle GPU or beside a
# memory-bound kernel, with or without an event wait before each copy); 2. issue 35's
# rows alone (scripts/interference.sh, 2,000 frames of the GPU modes, 1,000 of storage and
# zero copy and 1,000 passes of the disk's own read), with the images as ppm this time.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
nvidia-smi -L | tee "$O/gpu.txt"
timeout 60 device-carry/scratch/h2d2 > $O/h2d2.txt 2>&1; echo "h2d2 rc=$?"; cat $O/h2d2.txt
mkdir -p device-carry/bin && tar xJf device-carry/bin.tar.xz -C /tmp && cp /tmp/bin/* device-carry/bin/
export DLR_SHARED_DIR="$PWD/device-carry/shared"
CONDITIONS=alone N_SLOW=1000 DISK_PASSES=1000 timeout $((590 - SECONDS)) bash scripts/interference.sh $O/interference >$O/interference.txt 2>&1
echo "interference rc=$? at ${SECONDS}s"; tail -14 $O/interference.txt
