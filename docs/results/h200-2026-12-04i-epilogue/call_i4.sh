#!/usr/bin/env bash
# Call i4: 16-byte NHWC bias_activation kernel + maxpool vector path: tests, the fused
# choice's per-layer times, base (1000b2a) against new alternating, ncu of the first kernels.
set -u
B="$PWD/device-carry/bin"; S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
mkdir -p /tmp/base && tar xJf device-carry/bin-base.tar.xz -C /tmp/base; BB=/tmp/base/bin-base
nvidia-smi -L | tee "$O/gpu.txt"
timeout 250 "$B/dlr_gpu_tests" --gtest_filter='BiasActivationTest.*:EpilogueAdd.*:PoolCopyTest.*:FusionGpu.*:FusedConvTest.*:ConvAccuracy.Fp16*' >"$O/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|^\[       OK|error vs fp32|kept choices|Failure' "$O/tests.log" | head -40
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 bin=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 100 "$bin/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$?"; }
P="--size 608 --precision fp16 --cache"
ITERS=10 b warm_base $BB /tmp/cb "$y" --weights $W $P
DLR_LOG_LEVEL=debug ITERS=10 b warm_new $B /tmp/cn4 "$y" --weights $W $P
grep -E "cuDNN graph [0-9.]+ ms, conv \+ epilogue" "$O/warm_new.txt" > "$O/choice.txt"; wc -l "$O/choice.txt"
for r in 1 2 3; do b p16_base_$r $BB /tmp/cb "$y" --weights $W $P; b p16_new_$r $B /tmp/cn4 "$y" --weights $W $P; done
b off_base $BB /tmp/cb "$y" --weights $W $P --fusion off; b off_new $B /tmp/cn4 "$y" --weights $W $P --fusion off
ITERS=10 b warmt_base $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache
ITERS=10 b warmt_new $B /tmp/cn4 "$t" --weights $WT --size 416 --precision fp16 --cache
for r in 1 2; do b tiny_base_$r $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache; b tiny_new_$r $B /tmp/cn4 "$t" --weights $WT --size 416 --precision fp16 --cache; done
ITERS=50 b rep_new $B /tmp/cn4 "$y" --weights $W $P --report table
python3 - "$O" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))
        for r in d.get("results", []):
            n = r["network"]; su = r.get("startup", {}).get("engine", {})
            print(f"{os.path.basename(f)[:-5]:14s} med {n['median_ms']:7.3f} p90 {n['p90_ms']:7.3f} min {n['min_ms']:7.3f} fused {su.get('convs_fused','-')} slower {su.get('fused_slower','-')}")
    except Exception as e: print(f, "?", e)
PY
head -40 "$O/choice.txt" | sed 's/.*layer/layer/'
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
DLR_CACHE_DIR=/tmp/cn4 timeout 150 $NCU --section SpeedOfLight --launch-skip 2 --launch-count 14 "$B/dlbench" "$y" --weights $W --size 608 --precision fp16 --cache --iters 1 --warmup 0 > "$O/ncu_first.txt" 2>&1; echo "ncu rc=$?"
grep -E "^  [a-zA-Z_].*\(|Duration" "$O/ncu_first.txt" | sed 's/(dlr::TensorView.*//' | cut -c1-110 | paste - - | head -20
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_i4.tgz" -C /tmp/pack . && ls -la "$O"
