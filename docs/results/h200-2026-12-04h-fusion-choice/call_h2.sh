#!/usr/bin/env bash
# Call 2: pool/fusion GPU tests (separable maxpool; fused plans selected by timing);
# yolov4 @608 fp16: auto, auto + --find (several cuDNN engines per graph), cudnn, off,
# alternating; batch 8 and tiny the same; profiled tables.
set -u
B="$PWD/device-carry/bin"; S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
C1=/tmp/dlrcache-auto; C2=/tmp/dlrcache-cudnn; C3=/tmp/dlrcache-find
nvidia-smi -L | tee "$O/gpu.txt"
timeout 240 "$B/dlr_gpu_tests" --gtest_filter='PoolCopyTest.*:FusionGpu.*:FusedConvTest.*:EpilogueAdd.*:GpuBench.*' >"$O/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|fusion auto with the cache|find_algorithms|maxpool|Failure' "$O/tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 c=$2; shift 2; DLR_CACHE_DIR=$c timeout 150 "$B/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? $(grep -oE 'cuDNN graphs [0-9.]+ \([^)]*\)' "$O/$n.txt" | head -1)"; }
P="--size 608 --precision fp16 --cache"
ITERS=20 b warm_auto $C1 "$y" --weights $W $P
ITERS=20 b warm_find $C3 "$y" --weights $W $P --find
ITERS=20 b warm_cudnn $C2 "$y" --weights $W $P --fusion cudnn
for r in 1 2; do
  b p16_off_$r $C1 "$y" --weights $W $P --fusion off; b p16_cudnn_$r $C2 "$y" --weights $W $P --fusion cudnn
  b p16_auto_$r $C1 "$y" --weights $W $P; b p16_find_$r $C3 "$y" --weights $W $P --find
  b p16_find_${r}b $C3 "$y" --weights $W $P --find; b p16_auto_${r}b $C1 "$y" --weights $W $P
  b p16_cudnn_${r}b $C2 "$y" --weights $W $P --fusion cudnn; b p16_off_${r}b $C1 "$y" --weights $W $P --fusion off
done
ITERS=20 b warmt_auto $C1 "$t" --weights $WT --size 416 --precision fp16 --cache
ITERS=20 b warmt_find $C3 "$t" --weights $WT --size 416 --precision fp16 --cache --find
for r in 1 2; do for m in auto find; do f=""; [ $m = find ] && f=--find; c=$C1; [ $m = find ] && c=$C3
  b tiny_${m}_$r $c "$t" --weights $WT --size 416 --precision fp16 --cache $f; done; done
ITERS=10 b warm8_auto $C1 "$y" --weights $W $P --batch 8
ITERS=10 b warm8_find $C3 "$y" --weights $W $P --batch 8 --find
for m in auto find auto find; do f=""; [ $m = find ] && f=--find; c=$C1; [ $m = find ] && c=$C3
  ITERS=100 b b8_${m}_$RANDOM $c "$y" --weights $W $P --batch 8 $f; done
ITERS=200 b smin_find $C3 "$y" --weights $W $P --mode stream --weight-budget min --find
ITERS=200 b s50_find $C3 "$y" --weights $W $P --mode stream --weight-budget 50% --find
ITERS=50 b rep_find $C3 "$y" --weights $W $P --find --report table
python3 - "$O" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))
        for r in d.get("results", []):
            n = r["network"]; su = r.get("startup", {}).get("engine", {})
            print(f"{os.path.basename(f)[:-5]:16s} med {n['median_ms']:7.3f} p90 {n['p90_ms']:7.3f} min {n['min_ms']:7.3f}"
                  f"  fused {su.get('convs_fused','-')} slower {su.get('fused_slower','-')} timed {su.get('fused_timed','-')} choice {su.get('fused_choice_ms',0):.0f} ms build {su.get('fused_ms',0):.0f} ms ws {r['memory'].get('workspace', r['memory'])}")
    except Exception as e: print(f, "?", e)
PY
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_h2.tgz" -C /tmp/pack . && ls -la "$O"
