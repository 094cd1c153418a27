#!/usr/bin/env bash
# Call j4: f16 activations through activate_f16 and copy_channels' 16-byte path (no direct conv):
# the affected tests, base (5281227) against new per layer and end to end.
set -u
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
mkdir -p /tmp/base && tar xJf device-carry/bin-base.tar.xz -C /tmp/base; BB=/tmp/base/bin-base
nvidia-smi -L | tee "$O/gpu.txt"
timeout 200 "$B/dlr_gpu_tests" --gtest_filter='PoolCopyTest.*:BiasActivationTest.*:*CudaEngineE2E*:FusionGpu.*:*Shortcut*' >"$O/tests.log" 2>&1
echo "direct rc=$?"; grep -E '^\[  (PASSED|FAILED)|Failure|^\[  FAILED|ulp|synthetic weights|rel err' "$O/tests.log" | head -30
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 bin=$2 c=$3; shift 3; DLR_CACHE_DIR=$c DLR_LOG_LEVEL=${LL:-info} timeout 60 "$bin/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$?"; }
P="--size 608 --precision fp16 --cache"
ITERS=5 b warm_base $BB /tmp/cb "$y" --weights $W $P; LL=debug ITERS=5 b warm_new $B /tmp/cn "$y" --weights $W $P
grep -cE "conv \+ epilogue" "$O/warm_new.txt"
for r in 1 2; do b p16_base_$r $BB /tmp/cb "$y" --weights $W $P; b p16_new_$r $B /tmp/cn "$y" --weights $W $P; done
ITERS=50 b rep_base $BB /tmp/cb "$y" --weights $W $P --report table; ITERS=50 b rep_new $B /tmp/cn "$y" --weights $W $P --report table
b tf32_base $BB /tmp/cb "$y" --weights $W --size 608 --precision tf32 --cache; b tf32_new $B /tmp/cn "$y" --weights $W --size 608 --precision tf32 --cache
ITERS=100 b fp32_base $BB /tmp/cb "$y" --weights $W --size 608 --precision fp32 --cache; ITERS=100 b fp32_new $B /tmp/cn "$y" --weights $W --size 608 --precision fp32 --cache
ITERS=50 b rep32_base $BB /tmp/cb "$y" --weights $W --size 608 --precision fp32 --cache --report table; ITERS=50 b rep32_new $B /tmp/cn "$y" --weights $W --size 608 --precision fp32 --cache --report table
ITERS=50 b rept_base $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache --report table; ITERS=50 b rept_new $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache --report table
ITERS=5 b warm8_base $BB /tmp/cb "$y" --weights $W $P --batch 8; ITERS=100 b b8_base $BB /tmp/cb "$y" --weights $W $P --batch 8
ITERS=5 b warm8_new $B /tmp/cn "$y" --weights $W $P --batch 8; ITERS=100 b b8_new $B /tmp/cn "$y" --weights $W $P --batch 8
ITERS=200 b smin_new $B /tmp/cn "$y" --weights $W $P --mode stream --weight-budget min; ITERS=200 b s50_new $B /tmp/cn "$y" --weights $W $P --mode stream --weight-budget 50%
ITERS=200 b smin_base $BB /tmp/cb "$y" --weights $W $P --mode stream --weight-budget min; ITERS=200 b s50_base $BB /tmp/cb "$y" --weights $W $P --mode stream --weight-budget 50%
b off_base $BB /tmp/cb "$y" --weights $W $P --fusion off; b off_new $B /tmp/cn "$y" --weights $W $P --fusion off
for r in 1 2; do b tiny_base_$r $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache; b tiny_new_$r $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache; done
python3 - "$O" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))
        for r in d.get("results", []):
            n = r["network"]; L = r.get("profile", {}).get("layers", [])
            ex = " ".join(f"{l['type'][:4]}{l['layer']}:{l['kernel_ms']*1000:.1f}" for l in L[:3])
            print(f"{os.path.basename(f)[:-5]:12s} med {n['median_ms']:7.3f} p90 {n['p90_ms']:7.3f} min {n['min_ms']:7.3f} ips {r.get('throughput_ips',0):7.1f} {ex}")
    except Exception as e: print(f, "?", e)
PY
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_j4.tgz" -C /tmp/pack . && ls -la "$O"
