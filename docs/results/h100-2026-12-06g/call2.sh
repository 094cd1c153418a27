#!/usr/bin/env bash
# Thirty-fifth session, call 2: the GPU tests the change touches; strict fp32 in 8 MiB in the layout streamed fp32 takes by
# default (NCHW) with --stage-whole on and off beside its preload (two rounds, each row its
# own process); then the whole GPU suite of build V
# (default h17: main with layers staged whole and the int8 test that keeps its slices).
# Everything is written under $OUT as it goes (a call cut short still returns it).
set -u
O="$OUT"
v=${V:-h17}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; [ -f $W ] || $X/dlgen "$y" $W >/dev/null
b() { local n=$1 it=$2; shift 2
  DLR_CACHE_DIR=/tmp/cf2 timeout 120 $X/dlbench "$y" --weights $W --size 608 --cache --iters $it --warmup 5 "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s $(grep -E '^cuda' "$O/$n.txt" | awk '{print $2}' | tr '\n' ' ')"; }
t() { (cd $X && timeout $2 ./dlr_gpu_tests --gtest_filter="$3" > "$O/$1.log" 2>&1; echo "$1 rc=$? at ${SECONDS}s")
  grep -E '^\[  (PASSED|FAILED) |^\[  FAILED|tests ran' "$O/$1.log"; }
rows=(
  "pre_nchw --precision fp32 --layout nchw --mode preload"
  "st8_nchw_on --precision fp32 --layout nchw --mode stream --weight-budget 8MiB --stage-whole on"
  "st8_nchw_off --precision fp32 --layout nchw --mode stream --weight-budget 8MiB --stage-whole off"
)
t touched 150 'Int8Gpu.*:WholeStagingGpu.*:CudaEngine.BadOptionsAreErrors:StreamMode.BitIdenticalToPreload'
for r in "${rows[@]}"; do set -- $r; n=$1; shift; b fill_$n 3 "$@"; done
for round in 1 2; do for r in "${rows[@]}"; do set -- $r; n=$1; shift; b ${n}_$round 60 "$@"; done; done
t suite 420 '*'
