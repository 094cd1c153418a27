#!/usr/bin/env bash
# Call i3: ncu on the maxpool vector path (yolov4 @608 SPP) and on the 1x1 conv prototype.
set -u
B="$PWD/device-carry/bin"; S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
SEC="--section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section SchedulerStats"
timeout 120 $NCU $SEC --launch-count 1 ./device-carry/proto/conv1x1 > "$O/ncu_proto.txt" 2>&1; echo "proto ncu rc=$?"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
DLR_CACHE_DIR=/tmp/cn timeout 100 "$B/dlbench" "$y" --weights $W --size 608 --precision fp16 --cache --iters 3 --warmup 1 > "$O/warm.txt" 2>&1; echo "warm rc=$?"
DLR_CACHE_DIR=/tmp/cn timeout 200 $NCU $SEC --kernel-name regex:maxpool --launch-skip 3 --launch-count 3 "$B/dlbench" "$y" --weights $W --size 608 --precision fp16 --cache --iters 2 --warmup 1 > "$O/ncu_pool.txt" 2>&1; echo "pool ncu rc=$?"
DLR_CACHE_DIR=/tmp/cn timeout 200 $NCU $SEC --launch-skip 2 --launch-count 12 "$B/dlbench" "$y" --weights $W --size 608 --precision fp16 --cache --iters 1 --warmup 0 > "$O/ncu_first.txt" 2>&1; echo "first ncu rc=$?"
grep -E "^  [a-zA-Z_].*\(|Duration|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Block Limit|L1/TEX Hit|L2 Hit|Grid Size|Dynamic Shared" "$O"/ncu_*.txt | cut -c1-200 | head -150
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_i3.tgz" -C /tmp/pack . && ls -la "$O"
