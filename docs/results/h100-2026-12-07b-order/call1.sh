#!/usr/bin/env bash
# Thirty-eighth session: the pending dlrun_budget.sh, then four models at 30 % in two orders
# of the round (big, big, small, small as before; big, small, big, small), then each
# model's kernel times at open. One dlbench process per row.
# Everything in one tarball under $OUT.
set -u
bash docs/results/pending-device/dlrun_budget.sh; echo "dlrun_budget done at ${SECONDS}s"
O=/tmp/oo; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/order.tgz" -C /tmp oo; }; trap fin EXIT
v=${V:-h22}; X=/tmp/$v/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"; M=$S/models; SW="$S/weights"
export DLR_CACHE_DIR=/tmp/c_models
A="$M/yolov4.cfg@608"; B="$M/yolov3.cfg@608"; C="$M/yolov4-tiny.cfg@416"; D="$SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416"
row() {  # NAME MODELS FLAGS...
  local n=$1 m=$2; shift 2
  timeout 110 $X/dlbench --models "$m" --runtime-budget 30% --split max-slowdown "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -A5 '^model  ' "$O/$n.txt" | head -6; grep -E '^device memory|dlbench:' "$O/$n.txt" | cut -c1-240; fin
}
fin
row abcd "$A,$B,$C,$D"
row acbd "$A,$C,$B,$D"
# Kernel times measured at open (kernel_ms_at_open) of each model alone, streamed at its
# minimum pool, for a lower bound of the round computed later without a GPU.
k() { local n=$1 cfg=$2 w=$3 s=$4
  DLR_CACHE_DIR=/tmp/c_k timeout 60 $X/dlbench "$cfg" --weights "$w" --size $s --cache --iters 10 --warmup 3 --precision fp16 --mode stream --weight-budget min,all --json "$O/k_$n.json" >"$O/k_$n.txt" 2>&1
  echo "k_$n rc=$? at ${SECONDS}s"; fin; }
k yolov4 $M/yolov4.cfg /tmp/gen/yolov4.weights 608
k yolov3 $M/yolov3.cfg /tmp/gen/yolov3.weights 608
k tiny $M/yolov4-tiny.cfg /tmp/gen/yolov4-tiny.weights 416
k fastest $SW/yolo-fastest-1.1.cfg $SW/yolo-fastest-1.1.weights 416
echo "end at ${SECONDS}s"
