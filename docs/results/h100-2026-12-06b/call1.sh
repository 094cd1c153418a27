#!/usr/bin/env bash
# Call 1 (twenty-ninth session). Builds: nb = main at 0af523c (before the checks after
# publishing, nb.tar.xz); hd = main at a465e5d (hd.tar.xz); hw = hd + an experiment
# (branch exp-warm): with DLR_EXPERIMENT_WARM_THREADS=K the engine runs each distinct
# convolution once at open on K threads (thread 0 on the engine's handle, the others on
# their own), before the graph capture. dlrun exec to exit with one detection of dog,
# yolov4 @608, caches warm (round 0 fills them, not counted), 5 rounds:
#   issue 31's storage rows: nb and hd, fp16 and fp32, with the floor each round;
#   the experiment: hw with K = 0 (unset), 1, 2, 4, 8, storage fp16 and preload fp16.
# Then one debug run per experiment row, dlbench --startup 3 for K = 0 and 4, and hd's
# whole GPU suite in the time left.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in nb hd hw; do mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/hd/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_su
one() {  # one: ROUND NAME BUILD K PREC MODE...
  local r=$1 n=$2 v=$3 k=$4 p=$5; shift 5
  local e=(env); [ "$k" != 0 ] && e=(env DLR_EXPERIMENT_WARM_THREADS=$k)
  local t0 t1 rc; t0=$(date +%s%N)
  timeout 30 "${e[@]}" /tmp/$v/bin/dlrun "$y" $W "$I" --device cuda --precision $p "$@" >/dev/null 2>"$O/err_$n.txt"
  rc=$?; t1=$(date +%s%N)
  echo "$r $n $rc $(( (t1 - t0) / 1000000 ))" | tee -a "$O/runs.txt"
}
: >"$O/runs.txt"
for round in 0 1 2 3 4 5; do
  for p in fp16 fp32; do for v in nb hd; do one $round su_${v}_$p $v 0 $p --mode stream --weights-from storage; done; done
  for k in 0 1 2 4 8; do
    one $round st_k$k hw $k fp16 --mode stream --weights-from storage
    one $round pre_k$k hw $k fp16
  done
  [ $round = 0 ] || timeout 60 /tmp/hd/bin/dlbench --startup-floor --json "$O/floor_$round.json" >"$O/floor_$round.txt" 2>&1
done
echo "rounds done at ${SECONDS}s"
grep -hE 'exec|process age|floor' "$O"/floor_*.txt | head -6
for k in 0 1 2 4 8; do
  for m in st pre; do
    a=(--mode stream --weights-from storage); [ $m = pre ] && a=()
    e=(env); [ "$k" != 0 ] && e=(env DLR_EXPERIMENT_WARM_THREADS=$k)
    timeout 30 "${e[@]}" /tmp/hw/bin/dlrun "$y" $W "$I" "$I" --device cuda --precision fp16 "${a[@]}" --log-level debug \
      >"$O/dbg_${m}_k$k.out" 2>"$O/dbg_${m}_k$k.txt"
    echo "dbg $m k$k rc=$?: $(grep -hE 'experiment warm' "$O/dbg_${m}_k$k.txt")"
  done
done
for k in 0 4; do
  e=(env); [ "$k" != 0 ] && e=(env DLR_EXPERIMENT_WARM_THREADS=$k)
  for m in st pre; do
    a=(--mode stream --weights-from storage); [ $m = pre ] && a=(--mode preload)
    timeout 90 "${e[@]}" /tmp/hw/bin/dlbench "$y" --weights $W --size 608 --precision fp16 "${a[@]}" \
      --cache --startup 3 --json "$O/su_${m}_k$k.json" >"$O/su_${m}_k$k.txt" 2>&1
    echo "startup $m k$k rc=$? at ${SECONDS}s"; grep -iE 'exec to exit|first' "$O/su_${m}_k$k.txt" | head -4
  done
done
timeout 40 env CUDA_MODULE_LOADING=EAGER /tmp/hd/bin/dlrun "$y" $W "$I" --device cuda --precision fp16 --mode stream \
  --weights-from storage >/dev/null 2>"$O/err_eager.txt"; echo "eager rc=$? at ${SECONDS}s"
unset DLR_CACHE_DIR
left=$((575 - SECONDS))
if [ $left -gt 100 ]; then
  timeout $left /tmp/hd/bin/dlr_gpu_tests --gtest_filter='-GpuBench.*' >"$O/gpu_tests.log" 2>&1
  echo "gpu suite rc=$? at ${SECONDS}s: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test|^\[  SKIPPED \] [0-9]+' "$O/gpu_tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$O/gpu_tests.log" | head -20
  echo "ok: $(grep -cE '^\[       OK \]' "$O/gpu_tests.log"); last: $(grep -E '^\[ RUN      \]' "$O/gpu_tests.log" | tail -1)"
fi
