#!/usr/bin/env bash
# The main job on a fresh Debian machine: install dependencies, build, then run
# dlrun on an embedded default: models/yolov4-tiny.cfg with generated (synthetic)
# weights on a generated image, printing the plan summary, detections and timing.
# When the shared data folder is present (DLR_SHARED_DIR or ../shared) it also runs
# the real COCO yolo-fastest-1.1 weights on dog.jpg.
# A CUDA device is used when present (dlrun --device cuda), else the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
mkdir -p build/demo
bin=build/tools
$bin/dlgen models/yolov4-tiny.cfg build/demo/yolov4-tiny-synthetic.weights
$bin/dlimage synth build/demo/scene.ppm --width 768 --height 576
device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -d /usr/local/cuda ]; then device=cuda; fi
echo "== yolov4-tiny (synthetic weights) on a generated image, --device $device"
$bin/dlrun models/yolov4-tiny.cfg build/demo/yolov4-tiny-synthetic.weights build/demo/scene.ppm \
  --device "$device" --ext-output --print-plan --thresh 0.5 | grep -E "^activations|^weights|Predicted|%" | head -20 || true
shared="${DLR_SHARED_DIR:-../shared}"
if [ -f "$shared/weights/yolo-fastest-1.1.weights" ] && [ -f "$shared/images/dog.jpg" ]; then
  echo "== yolo-fastest-1.1 (real COCO weights) on dog.jpg, --device $device"
  $bin/dlrun "$shared/weights/yolo-fastest-1.1.cfg" "$shared/weights/yolo-fastest-1.1.weights" "$shared/images/dog.jpg" \
    --device "$device" --ext-output --out build/demo/dog-detections.jpg
  echo "(annotated image: build/demo/dog-detections.jpg)"
fi
echo "== CPU latency, yolov4-tiny @416 (median of 10 after 3 warm-up runs)"
$bin/dlbench models/yolov4-tiny.cfg --weights build/demo/yolov4-tiny-synthetic.weights --device cpu --iters 10 --warmup 3
