#!/usr/bin/env bash
# Call j1: the direct first-layer conv. GPU suite (DirectConv first); base (5281227) against
# new, every row in its own process: fp16 auto x2 alternating, tiny, tf32, fp32, batch 8,
# stream at min / 50 %, the per-layer table, ncu of the direct kernel.
set -u
B="$PWD/device-carry/bin"; S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
mkdir -p /tmp/base && tar xJf device-carry/bin-base.tar.xz -C /tmp/base; BB=/tmp/base/bin-base
nvidia-smi -L | tee "$O/gpu.txt"
timeout 60 "$B/dlr_gpu_tests" --gtest_filter='DirectConv.*' >"$O/direct_tests.log" 2>&1
echo "direct rc=$?"; grep -E '^\[  (PASSED|FAILED)|Failure|^\[  FAILED' "$O/direct_tests.log" | head -20
grep -E '^\[conv\] direct' "$O/direct_tests.log" | awk '{for(i=1;i<=NF;i++) if($i ~ /^rel=/) print $i}' | sort -t= -k2 -g | tail -3
timeout 290 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*:FusedConvTest.MatchesTheCpuReference:DirectConv.*' >"$O/gpu_tests.log" 2>&1
echo "gpu suite rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|Failure' "$O/gpu_tests.log" | head -20; tail -2 "$O/gpu_tests.log"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 bin=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 60 "$bin/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$?"; }
P="--size 608 --precision fp16 --cache"
ITERS=5 b warm_base $BB /tmp/cb "$y" --weights $W $P; ITERS=5 b warm_new $B /tmp/cn "$y" --weights $W $P
for r in 1 2; do b p16_base_$r $BB /tmp/cb "$y" --weights $W $P; b p16_new_$r $B /tmp/cn "$y" --weights $W $P; done
ITERS=5 b warmt_base $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache
ITERS=5 b warmt_new $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache
for r in 1 2; do b tiny_base_$r $BB /tmp/cb "$t" --weights $WT --size 416 --precision fp16 --cache; b tiny_new_$r $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache; done
b tf32_base $BB /tmp/cb "$y" --weights $W --size 608 --precision tf32 --cache; b tf32_new $B /tmp/cn "$y" --weights $W --size 608 --precision tf32 --cache
ITERS=100 b fp32_base $BB /tmp/cb "$y" --weights $W --size 608 --precision fp32 --cache; ITERS=100 b fp32_new $B /tmp/cn "$y" --weights $W --size 608 --precision fp32 --cache
ITERS=5 b warm8_new $B /tmp/cn "$y" --weights $W $P --batch 8; ITERS=100 b b8_new $B /tmp/cn "$y" --weights $W $P --batch 8
ITERS=200 b smin_new $B /tmp/cn "$y" --weights $W $P --mode stream --weight-budget min
ITERS=200 b s50_new $B /tmp/cn "$y" --weights $W $P --mode stream --weight-budget 50%
ITERS=50 b rep_base $BB /tmp/cb "$y" --weights $W $P --report table; ITERS=50 b rep_new $B /tmp/cn "$y" --weights $W $P --report table
ITERS=50 b rept_new $B /tmp/cn "$t" --weights $WT --size 416 --precision fp16 --cache --report table
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
SEC="--section SpeedOfLight --section LaunchStats --section Occupancy"
for p in fp16 fp32; do DLR_CACHE_DIR=/tmp/cn timeout 120 $NCU $SEC --kernel-name regex:conv_direct --launch-count 1 "$B/dlbench" "$y" --weights $W --size 608 --precision $p --cache --iters 1 --warmup 0 > "$O/ncu_direct_$p.txt" 2>&1; echo "ncu $p rc=$?"; done
grep -E "^  [a-zA-Z_].*\(|Duration|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per" "$O"/ncu_*.txt | cut -c1-160 | head -30
python3 - "$O" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))
        for r in d.get("results", []):
            n = r["network"]; L = r.get("profile", {}).get("layers", [])
            ex = " ".join(f"{l['type'][:4]}{l['layer']}:{l['kernel_ms']*1000:.1f}" for l in L[:3])
            st = r.get("startup", {}).get("engine", {}) if isinstance(r.get("startup"), dict) else {}
            print(f"{os.path.basename(f)[:-5]:12s} med {n['median_ms']:7.3f} p90 {n['p90_ms']:7.3f} min {n['min_ms']:7.3f} ips {r.get('throughput_ips',0):7.1f} {ex}")
    except Exception as e: print(f, "?", e)
PY
grep -h "direct convs" "$O"/p16_new_1.txt "$O"/fp32_new.txt | cut -c1-100 | head -3
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_j1.tgz" -C /tmp/pack . && ls -la "$O"
