#!/usr/bin/env bash
# Call 10 (thirty-first session): issue 30's fp32 row at 8 MiB with the streamed plan in
# NHWC (`--layout nhwc`: the engine times 3xTF32 convs as for preload, their workspace
# unbounded) against today's NCHW with FMA convs, beside the fp32 preload; each row its
# own process, caches filled first, two rounds.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
v=h6; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
f32() { DLR_CACHE_DIR=/tmp/cf timeout 120 $X/dlbench "$y" --weights $W --size 608 --precision fp32 --cache \
  "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$? at ${SECONDS}s"; grep -E '^cuda' "$O/$n.txt" | cut -c1-400; }
n=fill_nchw f32 --mode preload,stream --weight-budget 8MiB --layout nchw --iters 5 --warmup 1
n=fill_nhwc f32 --mode preload,stream --weight-budget 8MiB --layout nhwc --iters 5 --warmup 1
for r in 1 2; do
  n=pre_$r f32 --mode preload --iters 60 --warmup 5
  n=nchw_8m_$r f32 --mode stream --weight-budget 8MiB --layout nchw --iters 60 --warmup 5
  n=nhwc_8m_$r f32 --mode stream --weight-budget 8MiB --layout nhwc --iters 60 --warmup 5
done
echo "end at ${SECONDS}s"
