#!/usr/bin/env bash
# Forty-fourth session, call 2 (build h30): where the time of int8 at the minimum pool
# goes. yolov4 @608, dlbench with one profiled run after each row (--report table: CUDA
# events per layer and per copy inside the graph), --expansion-stage on and off, and the
# unprofiled rows again beside the fp16 preload. One tarball.
set -u
O=/tmp/o2; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/call2.tgz" -C /tmp o2; }; trap fin EXIT
v=${V:?name the build}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }
X=/tmp/$v/bin; nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/c2
b() { local n=$1 it=$2; shift 2
  timeout 120 $X/dlbench "$y" --weights $W --size 608 --cache --iters $it --warmup 5 "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s $(grep -E '^cuda' "$O/$n.txt" | head -1 | cut -c1-200)"; }
i8="--precision fp16 --mode stream --weight-budget min --weight-format int8"
b fill 3 --precision fp16 --mode preload
b fill_i8 3 $i8
b pre16 60 --precision fp16 --mode preload
b i8 60 $i8
b i8_inline 60 $i8 --expansion-stage off
b i8_prof 20 $i8 --report table; fin
b i8_inline_prof 20 $i8 --expansion-stage off --report table; fin
b pre_i8_prof 20 --precision fp16 --mode preload --weight-format int8 --report table
echo "end at ${SECONDS}s"
