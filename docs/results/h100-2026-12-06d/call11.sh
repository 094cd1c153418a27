#!/usr/bin/env bash
# Call 11 (thirty-first session): one profiled inference (--report table: CUDA events per
# layer inside the graph) of issue 30's fp32 row at 8 MiB and issue 33's int8 row at the
# minimum pool, each after its kernel times at open, to set the run's layers against them.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
v=h6; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
b() { DLR_CACHE_DIR=/tmp/cf timeout 120 $X/dlbench "$y" --weights $W --size 608 --cache "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
      echo "$n rc=$? at ${SECONDS}s"; grep -E '^cuda' "$O/$n.txt" | cut -c1-300; }
n=fill32 b --precision fp32 --mode stream --weight-budget 8MiB --iters 5 --warmup 1
n=fill8 b --precision fp16 --mode preload,stream --weight-budget min --weight-format int8 --iters 5 --warmup 1
n=f32_8m b --precision fp32 --mode stream --weight-budget 8MiB --iters 60 --warmup 5 --report table
n=i8_min b --precision fp16 --mode stream --weight-budget min --weight-format int8 --iters 60 --warmup 5 --report table
n=f16_pre b --precision fp16 --mode preload --iters 60 --warmup 5
echo "end at ${SECONDS}s"
