#!/usr/bin/env bash
# Thirty-third session (written), run in the thirty-fourth as call 1: where issue 30's fp32 row at
# 8 MiB and issue 33's int8 row at the minimum pool lose time against their bounds. Each
# streamed row beside the same sliced plan preloaded (no copies, no cross-stream edges)
# and the same slices streamed
# through a ring of about half the weights, all streamed (--residency none; a budget that
# holds them all would make the plan resident), so that the pool rarely holds a copy back:
#   preload sliced - preload      = what slicing costs the kernels
#   big ring - preload sliced     = what streaming's copies and edges cost the kernels
#   8 MiB ring - big ring         = what the small pool costs (copies held back)
# Every row its own process (dlbench, 60 inferences after 5), caches filled first, rounds
# interleaved. V (default h12): the build, device-carry/$V.tar.xz (pending-device/README.md).
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
v=${V:-h12}; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/cf
b() { local n=$1 it=$2; shift 2
  timeout 120 $X/dlbench "$y" --weights $W --size 608 --cache --iters $it --warmup 5 "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s $(grep -E '^cuda' "$O/$n.txt" | awk '{print $2}' | tr '\n' ' ')"; }
big="--mode stream --weight-budget 128MiB --residency none"     # fp32: 245.4 MiB of weights
big8="--mode stream --weight-budget 32MiB --residency none"      # int8: 61.6 MiB
rows=(
  "pre_nhwc --precision fp32 --layout nhwc --mode preload"
  "pres4_nhwc --precision fp32 --layout nhwc --mode preload --slot-size 4MiB"
  "st8_nhwc --precision fp32 --layout nhwc --mode stream --weight-budget 8MiB"
  "big4_nhwc --precision fp32 --layout nhwc --slot-size 4MiB $big"
  "pre_nchw --precision fp32 --layout nchw --mode preload"
  "pres4_nchw --precision fp32 --layout nchw --mode preload --slot-size 4MiB"
  "st8_nchw --precision fp32 --layout nchw --mode stream --weight-budget 8MiB"
  "big4_nchw --precision fp32 --layout nchw --slot-size 4MiB $big"
  "pre16 --precision fp16 --mode preload"
  "prei8 --precision fp16 --mode preload --weight-format int8"
  "mini8 --precision fp16 --mode stream --weight-budget min --weight-format int8"
  "bigi8 --precision fp16 --weight-format int8 $big8"
)
for r in "${rows[@]}"; do set -- $r; n=$1; shift; b fill_$n 3 "$@"; done
for round in 1 2; do
  for r in "${rows[@]}"; do set -- $r; n=$1; shift; b ${n}_$round 60 "$@"; done
done
# One profiled run each (CUDA events per layer inside the graph): where the streamed rows wait.
for n in st8_nhwc big4_nhwc pres4_nhwc mini8 bigi8 prei8; do
  for r in "${rows[@]}"; do set -- $r; [ "$1" = "$n" ] && { shift; b prof_$n 10 "$@" --report table; }; done
done
echo "end at ${SECONDS}s"
