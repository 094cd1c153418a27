#!/usr/bin/env bash
# Call 2 (twenty-ninth session). Builds: hd = main at a465e5d; hw = hd + experiments
# (branch exp-warm), each switched on by a variable:
#   DLR_EXPERIMENT_PRELOAD_CUDNN=1: cuDNN's libraries (graph, ops, cnn, heuristic,
#     engines_precompiled) opened on a thread of their own when the device start begins,
#     beside the CUDA context;
#   DLR_EXPERIMENT_NO_PRIME=1: no priming convolution on the helper thread;
#   DLR_EXPERIMENT_WARM_THREADS=K: each distinct convolution run once at open on K threads.
# dlrun exec to exit with one detection of dog, yolov4 @608 fp16, caches warm (round 0
# fills them), 5 rounds, storage and preload; debug runs; dlbench --startup 3; issue 31's
# stream-min rows (hd, fp16 and fp32); storage with --reader threads (pread) against io_uring; issue 30's fp32 row at 8 MiB against fp32 preload.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in hd hw; do rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; [ -f $W ] || /tmp/hd/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_su2
envof() { case $1 in
  base) echo "";; p) echo "DLR_EXPERIMENT_PRELOAD_CUDNN=1";; n) echo "DLR_EXPERIMENT_NO_PRIME=1";;
  pn) echo "DLR_EXPERIMENT_PRELOAD_CUDNN=1 DLR_EXPERIMENT_NO_PRIME=1";; w) echo "DLR_EXPERIMENT_WARM_THREADS=4";;
  pw) echo "DLR_EXPERIMENT_PRELOAD_CUDNN=1 DLR_EXPERIMENT_WARM_THREADS=4";; esac; }
one() {  # one: ROUND NAME BUILD VARIANT PREC DLRUN-FLAGS...
  local r=$1 n=$2 v=$3 x=$4 p=$5; shift 5
  local t0 t1 rc; t0=$(date +%s%N)
  timeout 30 env $(envof $x) /tmp/$v/bin/dlrun "$y" $W "$I" --device cuda --precision $p "$@" >/dev/null 2>"$O/err_$n.txt"
  rc=$?; t1=$(date +%s%N)
  echo "$r $n $rc $(( (t1 - t0) / 1000000 ))" | tee -a "$O/runs.txt"
}
: >"$O/runs.txt"
for round in 0 1 2 3 4 5; do
  for x in base p pn n w pw; do
    one $round st_$x hw $x fp16 --mode stream --weights-from storage
    one $round pre_$x hw $x fp16
  done
  one $round st_rt hd base fp16 --mode stream --weights-from storage --reader threads
  for p in fp16 fp32; do one $round min_$p hd base $p --mode stream --weight-budget min; done
  [ $round = 0 ] || timeout 60 /tmp/hd/bin/dlbench --startup-floor --json "$O/floor_$round.json" >"$O/floor_$round.txt" 2>&1
done
echo "rounds done at ${SECONDS}s"
grep -hE '^startup floor' "$O"/floor_*.txt | head -5 | cut -c1-200
for x in base p pn n pw; do
  timeout 30 env $(envof $x) /tmp/hw/bin/dlrun "$y" $W "$I" --device cuda --precision fp16 --mode stream \
    --weights-from storage --log-level debug >/dev/null 2>"$O/dbg_st_$x.txt"
  echo "dbg st $x rc=$?: $(grep -hE 'experiment|helper thread' "$O/dbg_st_$x.txt" | tr '\n' ' ' | cut -c1-400)"
done
for x in base pw pn; do
  for m in st pre; do
    a=(--mode stream --weights-from storage); [ $m = pre ] && a=(--mode preload)
    timeout 90 env $(envof $x) /tmp/hw/bin/dlbench "$y" --weights $W --size 608 --precision fp16 "${a[@]}" \
      --cache --startup 3 --json "$O/su_${m}_$x.json" >"$O/su_${m}_$x.txt" 2>&1
    echo "startup $m $x rc=$? at ${SECONDS}s"; grep -iE 'exec to exit|first' "$O/su_${m}_$x.txt" | tail -2 | cut -c1-330
  done
done
timeout 90 /tmp/hd/bin/dlbench "$y" --weights $W --size 608 --precision fp16 --mode stream --weights-from storage \
  --reader threads --cache --startup 3 --json "$O/su_st_rt.json" >"$O/su_st_rt.txt" 2>&1
echo "startup st threads-reader rc=$? at ${SECONDS}s"; grep -iE 'exec to exit|first' "$O/su_st_rt.txt" | tail -2 | cut -c1-330
unset DLR_CACHE_DIR
f32() { DLR_CACHE_DIR=/tmp/cf timeout 90 /tmp/hd/bin/dlbench "$y" --weights $W --size 608 --precision fp32 --cache \
  "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$? at ${SECONDS}s: $(grep -E '^cuda' "$O/$n.txt" | cut -c1-90)"; }
if [ $SECONDS -lt 330 ]; then
  n=f32_fill f32 --mode preload,stream --weight-budget 8MiB --iters 5 --warmup 1
  for r in 1 2; do
    n=f32_pre_$r f32 --mode preload --iters 60 --warmup 5
    n=f32_8m_$r f32 --mode stream --weight-budget 8MiB --iters 60 --warmup 5
  done
fi
echo "end at ${SECONDS}s"
