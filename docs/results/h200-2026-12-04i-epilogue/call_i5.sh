#!/usr/bin/env bash
# Call i5: 16-byte bias_activation kernels (NHWC and NCHW) + maxpool vector path: their
# tests; base (1000b2a) against new, every row in its own process, alternating: fp16 auto,
# off, --find; tiny; tf32; fp32; batch 8.
set -u
B="$PWD/device-carry/bin"; S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
mkdir -p /tmp/base && tar xJf device-carry/bin-base.tar.xz -C /tmp/base; BB=/tmp/base/bin-base
nvidia-smi -L | tee "$O/gpu.txt"
timeout 150 "$B/dlr_gpu_tests" --gtest_filter='BiasActivationTest.*:EpilogueAdd.*:PoolCopyTest.*:FusionGpu.Epilogue*:ConvAccuracy.*Nhwc*' >"$O/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|error vs fp32|Failure|Actual' "$O/tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 bin=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 120 "$bin/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$?"; }
P="--size 608 --precision fp16 --cache"
ITERS=5 b warm_base $BB /tmp/cb "$y" --weights $W $P
ITERS=5 b warm_new $B /tmp/cn "$y" --weights $W $P
ITERS=5 b warmf_new $B /tmp/cnf "$y" --weights $W $P --find
for r in 1 2; do
  b p16_base_$r $BB /tmp/cb "$y" --weights $W $P; b p16_new_$r $B /tmp/cn "$y" --weights $W $P; b p16_find_$r $B /tmp/cnf "$y" --weights $W $P --find
  b off_new_$r $B /tmp/cn "$y" --weights $W $P --fusion off; b off_base_$r $BB /tmp/cb "$y" --weights $W $P --fusion off
done
ITERS=5 b warmt_base $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache
ITERS=5 b warmt_new $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache
ITERS=5 b warmtf_new $B /tmp/cnf "$t" --weights $WT --size 416 --precision fp16 --cache --find
for r in 1 2; do b tiny_base_$r $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache; b tiny_new_$r $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache
  b tiny_find_$r $B /tmp/cnf "$t" --weights $WT --size 416 --precision fp16 --cache --find; done
for r in 1 2; do b tf32_base_$r $BB /tmp/cb "$y" --weights $W --size 608 --precision tf32 --cache; b tf32_new_$r $B /tmp/cn "$y" --weights $W --size 608 --precision tf32 --cache; done
ITERS=100 b fp32_base $BB /tmp/cb "$y" --weights $W --size 608 --precision fp32 --cache; ITERS=100 b fp32_new $B /tmp/cn "$y" --weights $W --size 608 --precision fp32 --cache
ITERS=5 b warm8_new $B /tmp/cn "$y" --weights $W $P --batch 8; ITERS=5 b warm8_base $BB /tmp/cb "$y" --weights $W $P --batch 8
ITERS=100 b b8_base $BB /tmp/cb "$y" --weights $W $P --batch 8; ITERS=100 b b8_new $B /tmp/cn "$y" --weights $W $P --batch 8
python3 - "$O" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))
        for r in d.get("results", []):
            n = r["network"]; su = r.get("startup", {}).get("engine", {})
            print(f"{os.path.basename(f)[:-5]:14s} med {n['median_ms']:7.3f} p90 {n['p90_ms']:7.3f} min {n['min_ms']:7.3f} ips {r.get('throughput_ips',0):7.1f} fused {su.get('convs_fused','-')} slower {su.get('fused_slower','-')}")
    except Exception as e: print(f, "?", e)
PY
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_i5.tgz" -C /tmp/pack . && ls -la "$O"
