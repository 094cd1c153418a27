#!/usr/bin/env bash
# Call i1: maxpool vector path and the Runtime's kept fused choices: their GPU tests; yolov4
# @608 fp16 preload, base (1000b2a) against new, alternating, with a per-layer report each.
set -u
B="$PWD/device-carry/bin"; S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
mkdir -p /tmp/base && tar xJf device-carry/bin-base.tar.xz -C /tmp/base; BB=/tmp/base/bin-base
nvidia-smi -L | tee "$O/gpu.txt"
timeout 200 "$B/dlr_gpu_tests" --gtest_filter='PoolCopyTest.*:FusionGpu.RuntimeEngines*:FusionGpu.PlansKept*:RuntimeGpu.ModelsMatch*' >"$O/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|kept choices|fusion auto with the cache|Failure' "$O/tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 bin=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 100 "$bin/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$?"; }
P="--size 608 --precision fp16 --cache"
ITERS=10 b warm_base $BB /tmp/cb "$y" --weights $W $P
ITERS=10 b warm_new $B /tmp/cn "$y" --weights $W $P
for r in 1 2 3; do b p16_base_$r $BB /tmp/cb "$y" --weights $W $P; b p16_new_$r $B /tmp/cn "$y" --weights $W $P; done
ITERS=10 b warmt_base $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache
ITERS=10 b warmt_new $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache
for r in 1 2; do b tiny_base_$r $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache; b tiny_new_$r $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache; done
ITERS=50 b rep_base $BB /tmp/cb "$y" --weights $W $P --report table
ITERS=50 b rep_new $B /tmp/cn "$y" --weights $W $P --report table
python3 - "$O" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))
        for r in d.get("results", []):
            n = r["network"]; L = r.get("profile", {}).get("layers", [])
            mp = " ".join(f"{l['layer']}:{l['kernel_ms']*1000:.1f}us" for l in L if l["type"] == "maxpool")
            print(f"{os.path.basename(f)[:-5]:14s} med {n['median_ms']:7.3f} p90 {n['p90_ms']:7.3f} min {n['min_ms']:7.3f} {mp}")
    except Exception as e: print(f, "?", e)
PY
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_i1.tgz" -C /tmp/pack . && ls -la "$O"
