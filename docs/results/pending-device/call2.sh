#!/usr/bin/env bash
# Call 2 (twenty-eighth session, not run), builds as in call 1 (nb = main at 0af523c; nc = main with the
# checks after publishing, run from nx.tar.xz without DLR_EXPERIMENT_NO_CHECK). Issue 31:
# dlrun from storage (prepared file made, caches warm), exec to exit with one detection
# of dog, yolov4 @608, fp16 and fp32, 5 rounds alternating the builds after a round 0
# that fills the caches, with the floor (dlbench --startup-floor) each round; then
# dlbench --startup 5 --cache of fp32 from storage for both builds; then nc's GPU suite
# in the time left.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in nb nx; do mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done; ln -s /tmp/nx /tmp/nc
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/nc/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_su
: >"$O/startup_runs.txt"
for round in 0 1 2 3 4 5; do
  for prec in fp16 fp32; do
    for v in nb nc; do
      t0=$(date +%s%N)
      /tmp/$v/bin/dlrun "$y" $W "$I" --device cuda --precision $prec --mode stream --weights-from storage \
        >/dev/null 2>"$O/su_err.txt"
      rc=$?; t1=$(date +%s%N)
      echo "$round $v $prec $rc $(( (t1 - t0) / 1000000 ))" | tee -a "$O/startup_runs.txt"
    done
  done
  [ $round = 0 ] || timeout 60 /tmp/nc/bin/dlbench --startup-floor --json "$O/floor_$round.json" >"$O/floor_$round.txt" 2>&1
done
grep -hE 'exec|process age|floor' "$O"/floor_*.txt | head -10
for v in nb nc; do
  timeout 120 /tmp/$v/bin/dlbench "$y" --weights $W --size 608 --precision fp32 --mode stream --weights-from storage \
    --cache --startup 5 --json "$O/su_$v.json" >"$O/su_$v.txt" 2>&1
  echo "startup $v rc=$? at ${SECONDS}s"; grep -iE 'exec to exit|above|floor' "$O/su_$v.txt" | head -6
done
unset DLR_CACHE_DIR
left=$((560 - SECONDS))
if [ $left -gt 120 ]; then
  timeout $left /tmp/nc/bin/dlr_gpu_tests --gtest_filter='-GpuBench.*' >"$O/gpu_tests.log" 2>&1
  echo "gpu suite rc=$? at ${SECONDS}s: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test|^\[  SKIPPED \] [0-9]+' "$O/gpu_tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$O/gpu_tests.log" | head -20
fi
