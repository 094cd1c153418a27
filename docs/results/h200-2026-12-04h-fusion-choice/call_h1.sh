#!/usr/bin/env bash
# Per-layer fusion choice, call 1: fusion GPU tests; yolov4 @608 fp16 auto (graph or conv +
# epilogue per configuration, timed at open) against cudnn (graphs everywhere), epilogue
# and off, alternating; tiny, batch 8, stream; a profiled run.
set -u
B="$PWD/device-carry/bin"; S="$PWD/device-carry/shared"; O="$OUT"
export DLR_SHARED_DIR="$S"
C1=/tmp/dlrcache-auto; C2=/tmp/dlrcache-cudnn
nvidia-smi -L | tee "$O/gpu.txt"
timeout 200 "$B/dlr_gpu_tests" --gtest_filter='FusionGpu.*:FusedConvTest.*:EpilogueAdd.*' >"$O/fusion_tests.log" 2>&1
echo "fusion tests rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/fusion_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|fusion auto with the cache' "$O/fusion_tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 c=$2; shift 2; DLR_CACHE_DIR=$c timeout 90 "$B/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? $(grep -oE 'cuDNN graphs [0-9.]+ \([^)]*\)' "$O/$n.txt" | head -1)"; }
ITERS=20 b warm_auto $C1 "$y" --weights $W --size 608 --precision fp16 --cache --fusion auto
ITERS=20 b warm_cudnn $C2 "$y" --weights $W --size 608 --precision fp16 --cache --fusion cudnn
ITERS=20 b warm_auto2 $C1 "$y" --weights $W --size 608 --precision fp16 --cache --fusion auto
for r in 1 2; do
  for f in off epilogue cudnn auto; do c=$C1; [ $f = cudnn ] && c=$C2; b "p16_${f}_$r" $c "$y" --weights $W --size 608 --precision fp16 --fusion $f --cache; done
  for f in auto cudnn epilogue off; do c=$C1; [ $f = cudnn ] && c=$C2; b "p16_${f}_${r}b" $c "$y" --weights $W --size 608 --precision fp16 --fusion $f --cache; done
done
for f in cudnn auto; do c=$C1; [ $f = cudnn ] && c=$C2; ITERS=20 b "warmt_$f" $c "$t" --weights $WT --size 416 --precision fp16 --fusion $f --cache; done
for f in off cudnn auto; do c=$C1; [ $f = cudnn ] && c=$C2; b "tiny_$f" $c "$t" --weights $WT --size 416 --precision fp16 --fusion $f --cache; done
for f in cudnn auto; do c=$C1; [ $f = cudnn ] && c=$C2; ITERS=10 b "warm8_$f" $c "$y" --weights $W --size 608 --precision fp16 --batch 8 --fusion $f --cache; done
for f in cudnn auto; do c=$C1; [ $f = cudnn ] && c=$C2; ITERS=100 b "b8_$f" $c "$y" --weights $W --size 608 --precision fp16 --batch 8 --fusion $f --cache; done
ITERS=200 b smin_auto $C1 "$y" --weights $W --size 608 --precision fp16 --mode stream --weight-budget min --cache
ITERS=200 b s50_auto $C1 "$y" --weights $W --size 608 --precision fp16 --mode stream --weight-budget 50% --cache
ITERS=50 b rep_auto $C1 "$y" --weights $W --size 608 --precision fp16 --cache --report table
ITERS=50 b rep_cudnn $C2 "$y" --weights $W --size 608 --precision fp16 --cache --fusion cudnn --report table
python3 - "$O" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        d = json.load(open(f))
        for r in d.get("results", []):
            n = r["network"]; su = r.get("startup", {}).get("engine", {})
            print(f"{os.path.basename(f)[:-5]:16s} med {n['median_ms']:7.3f} p90 {n['p90_ms']:7.3f} min {n['min_ms']:7.3f}"
                  f"  fused {su.get('convs_fused','-')} slower {su.get('fused_slower','-')} timed {su.get('fused_timed','-')} choice {su.get('fused_choice_ms',0):.0f} ms build {su.get('fused_ms',0):.0f} ms")
    except Exception as e: print(f, "?", e)
PY
cp $C1/fused-plans/*.json "$O/" 2>/dev/null; ls -la $C1/fused-plans $C2/fused-plans
mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r "$O"/. /tmp/pack/ && rm -rf "$O"/* && tar czf "$O/call_h1.tgz" -C /tmp/pack . && ls -la "$O"
