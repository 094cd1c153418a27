#!/usr/bin/env bash
# Call i8 (final code): the GPU suite; then base (1000b2a) against new, every row in its own
# process: fp16 auto / off, tiny, tf32, fp32, batch 8, stream at the minimum pool and 50 %.
set -u
B="$PWD/device-carry/bin"; S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
mkdir -p /tmp/base && tar xJf device-carry/bin-base.tar.xz -C /tmp/base; BB=/tmp/base/bin-base
nvidia-smi -L | tee "$O/gpu.txt"
timeout 275 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*:FusedConvTest.MatchesTheCpuReference' >"$O/gpu_tests.log" 2>&1
echo "gpu suite rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|Failure' "$O/gpu_tests.log" | head -20; grep -c '^\[       OK' "$O/gpu_tests.log"; tail -2 "$O/gpu_tests.log"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 bin=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 60 "$bin/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$?"; }
P="--size 608 --precision fp16 --cache"
ITERS=5 b warm_base $BB /tmp/cb "$y" --weights $W $P; ITERS=5 b warm_new $B /tmp/cn "$y" --weights $W $P
for r in 1 2; do b p16_base_$r $BB /tmp/cb "$y" --weights $W $P; b p16_new_$r $B /tmp/cn "$y" --weights $W $P; done
b off_new $B /tmp/cn "$y" --weights $W $P --fusion off
ITERS=5 b warmt_new $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache
b tiny_new $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache
b tf32_new $B /tmp/cn "$y" --weights $W --size 608 --precision tf32 --cache
ITERS=100 b fp32_new $B /tmp/cn "$y" --weights $W --size 608 --precision fp32 --cache
ITERS=5 b warm8_new $B /tmp/cn "$y" --weights $W $P --batch 8; ITERS=100 b b8_new $B /tmp/cn "$y" --weights $W $P --batch 8
ITERS=200 b smin_new $B /tmp/cn "$y" --weights $W $P --mode stream --weight-budget min
ITERS=200 b s50_new $B /tmp/cn "$y" --weights $W $P --mode stream --weight-budget 50%
python3 - "$O" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))
        for r in d.get("results", []):
            n = r["network"]; L = r.get("profile", {}).get("layers", [])
            ex = " ".join(f"{l['type'][:4]}{l['layer']}:{l['kernel_ms']*1000:.1f}" for l in L if l["type"] in ("maxpool","yolo","upsample"))
            print(f"{os.path.basename(f)[:-5]:12s} med {n['median_ms']:7.3f} p90 {n['p90_ms']:7.3f} min {n['min_ms']:7.3f} ips {r.get('throughput_ips',0):7.1f} {ex}")
    except Exception as e: print(f, "?", e)
PY
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_i8.tgz" -C /tmp/pack . && ls -la "$O"
