#!/usr/bin/env bash
# The first run on a fresh Debian machine: install dependencies, build, then
#  1. real detections: the COCO yolo-fastest-1.1 weights on dog.jpg from the shared data
#     folder (DLR_SHARED_DIR, else ../shared), on the CPU and, when a CUDA device is
#     present, on the GPU too; the annotated image goes to build/demo/;
#  2. demand layering on the GPU (when there is one): the same model streamed through the
#     smallest weight pool, 20 frames, with the memory/latency summary next to preload;
#     without a GPU, the CPU's memory/latency summary of the same 20 frames;
#  3. models/yolov4-tiny.cfg with generated (synthetic, random) weights: the plan summary
#     and timing only. Random weights find nothing real, so no detections are printed.
# It builds only the tools it runs (dlrun, dlgen, dlimage, dlbench and their libraries),
# not the tests. CUDA code is compiled only where a GPU is present (nvidia-smi -L lists
# one, or /dev/nvidia0 exists) or when DLR_DEMO_CUDA=1 asks for it; DLR_DEMO_CUDA=0 builds
# the CPU backend only even on a GPU machine. scripts/test.sh builds everything.
set -euo pipefail
cd "$(dirname "$0")/.."
has_gpu=no
if { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; } || [ -e /dev/nvidia0 ]; then
  has_gpu=yes
fi
cuda="${DLR_DEMO_CUDA:-}"
if [ -z "$cuda" ]; then cuda=0; [ "$has_gpu" = yes ] && cuda=1; fi
case "$cuda" in
  1) cuda_flag=-DDLR_CUDA=AUTO ;;
  0) cuda_flag=-DDLR_CUDA=OFF ;;
  *) echo "demo.sh: DLR_DEMO_CUDA must be 0 or 1, not '$cuda'" >&2; exit 2 ;;
esac
# Only the tools' packages and no test suite: scripts/test.sh installs and configures the rest.
DLR_SETUP_ARGS=--tools DLR_BUILD_TARGETS="dlrun dlgen dlimage dlbench" bash scripts/build.sh "$cuda_flag" \
  -DDLR_BUILD_TESTS=OFF >/dev/null
mkdir -p build/demo
bin=build/tools
gpu=no
if [ "$has_gpu" = yes ] && [ "$cuda" = 1 ] && [ -d /usr/local/cuda ]; then gpu=yes; fi
shared="${DLR_SHARED_DIR:-../shared}"
cfg="$shared/weights/yolo-fastest-1.1.cfg"
weights="$shared/weights/yolo-fastest-1.1.weights"
dog="$shared/images/dog.jpg"

if [ -f "$weights" ] && [ -f "$cfg" ] && [ -f "$dog" ]; then
  echo "== 1. yolo-fastest-1.1 (real COCO weights) on dog.jpg, CPU"
  $bin/dlrun "$cfg" "$weights" "$dog" --ext-output --out build/demo/dog-detections.jpg
  echo "(annotated image: build/demo/dog-detections.jpg)"
  if [ "$gpu" = yes ]; then
    echo "== 1b. the same on the GPU (--device cuda)"
    $bin/dlrun "$cfg" "$weights" "$dog" --device cuda --ext-output
  fi
  for _ in $(seq 20); do echo "$dog"; done > build/demo/dog20.txt
  if [ "$gpu" = yes ]; then
    echo "== 2. demand layering: 20 frames, all weights resident (preload) vs streamed through the smallest pool"
    $bin/dlrun "$cfg" "$weights" --list build/demo/dog20.txt --device cuda --mode preload --summary always >/dev/null
    $bin/dlrun "$cfg" "$weights" --list build/demo/dog20.txt --device cuda --mode stream --weight-budget min \
      --summary always >/dev/null
  else
    echo "== 2. no CUDA device: weight streaming needs one; the CPU's memory/latency summary of 20 frames"
    $bin/dlrun "$cfg" "$weights" --list build/demo/dog20.txt --summary always >/dev/null
  fi
else
  echo "== (no shared data at $shared: set DLR_SHARED_DIR to the folder holding weights/ and images/"
  echo "   to see real detections of yolo-fastest-1.1 on dog.jpg)"
fi

echo "== 3. yolov4-tiny with SYNTHETIC (random) weights on a generated image: plan and timing only"
echo "   (random weights detect nothing real, so their detections are not printed)"
$bin/dlgen models/yolov4-tiny.cfg build/demo/yolov4-tiny-synthetic.weights
$bin/dlimage synth build/demo/scene.ppm --width 768 --height 576
device=cpu
if [ "$gpu" = yes ]; then device=cuda; fi
$bin/dlrun models/yolov4-tiny.cfg build/demo/yolov4-tiny-synthetic.weights build/demo/scene.ppm \
  --device "$device" --print-plan | grep -E "^activations|^weights|Predicted" || true
echo "== CPU latency, yolov4-tiny @416 (median of 10 after 3 warm-up runs)"
$bin/dlbench models/yolov4-tiny.cfg --weights build/demo/yolov4-tiny-synthetic.weights --device cpu --iters 10 --warmup 3
