#!/usr/bin/env bash
# Call 3 (final code): the whole GPU suite; yolov4 @608 fp16 off / auto / auto + --find
# alternating (separable maxpool in all); tiny; batch 8; tf32 and fp32; stream; start-up.
set -u
B="$PWD/device-carry/bin"; S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
C1=/tmp/dlrcache-auto; C3=/tmp/dlrcache-find
nvidia-smi -L | tee "$O/gpu.txt"
timeout 290 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*' >"$O/gpu_tests.log" 2>&1
echo "gpu suite rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|fusion auto with the cache|find_algorithms|yolov4 @416 fp16: error|Failure' "$O/gpu_tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 c=$2; shift 2; DLR_CACHE_DIR=$c timeout 100 "$B/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? $(grep -oE 'cuDNN graphs [0-9.]+ \([^)]*\)' "$O/$n.txt" | head -1)"; }
P="--size 608 --precision fp16 --cache"
ITERS=10 b warm_auto $C1 "$y" --weights $W $P
ITERS=10 b warm_find $C3 "$y" --weights $W $P --find
for r in 1 2; do
  b p16_off_$r $C1 "$y" --weights $W $P --fusion off; b p16_auto_$r $C1 "$y" --weights $W $P; b p16_find_$r $C3 "$y" --weights $W $P --find
  b p16_find_${r}b $C3 "$y" --weights $W $P --find; b p16_auto_${r}b $C1 "$y" --weights $W $P; b p16_off_${r}b $C1 "$y" --weights $W $P --fusion off
done
ITERS=10 b warmt_find $C3 "$t" --weights $WT --size 416 --precision fp16 --cache --find
for m in off find auto; do f=""; [ $m = find ] && f=--find; [ $m = off ] && f="--fusion off"; c=$C1; [ $m = find ] && c=$C3
  b tiny_$m $c "$t" --weights $WT --size 416 --precision fp16 --cache $f; done
b tf32 $C1 "$y" --weights $W --size 608 --precision tf32 --cache
ITERS=100 b fp32 $C1 "$y" --weights $W --size 608 --precision fp32 --cache
ITERS=5 b warm8_find $C3 "$y" --weights $W $P --batch 8 --find
for m in find find; do ITERS=100 b b8_${m}_$RANDOM $C3 "$y" --weights $W $P --batch 8 --find; done
ITERS=200 b smin_find $C3 "$y" --weights $W $P --mode stream --weight-budget min --find
ITERS=200 b s50_find $C3 "$y" --weights $W $P --mode stream --weight-budget 50% --find
ITERS=200 b smin_auto $C1 "$y" --weights $W $P --mode stream --weight-budget min
ITERS=50 b rep_find $C3 "$y" --weights $W $P --find --report table
DLR_CACHE_DIR=$C3 timeout 60 "$B/dlbench" "$y" --weights $W $P --find --startup 5 --json "$O/startup.json" >"$O/startup.txt" 2>&1
echo "startup rc=$?"; grep -iE 'median|floor' "$O/startup.txt" | head -4
python3 - "$O" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))
        for r in d.get("results", []):
            n = r["network"]; su = r.get("startup", {}).get("engine", {})
            print(f"{os.path.basename(f)[:-5]:16s} med {n['median_ms']:7.3f} p90 {n['p90_ms']:7.3f} min {n['min_ms']:7.3f} ips {r.get('throughput_ips',0):7.1f}"
                  f"  fused {su.get('convs_fused','-')} slower {su.get('fused_slower','-')} timed {su.get('fused_timed','-')} build {su.get('fused_ms',0):.0f} ms")
    except Exception as e: print(f, "?", e)
PY
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_h3.tgz" -C /tmp/pack . && ls -la "$O"
