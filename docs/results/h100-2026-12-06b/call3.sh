#!/usr/bin/env bash
# Call 3 (twenty-ninth session). Builds: hd = main at a465e5d; h2 = main with the kernels
# warmed at open on 4 threads (--warm-threads, default 4; 0 = as hd). First the new GPU
# test; then issue 31's start-up rows: dlbench --startup 5 --cache with --warm-threads 0,4
# (storage fp16 and fp32, preload fp16, stream min fp16), and dlrun exec to exit with one
# detection of dog (yolov4 @608, caches warm, round 0 fills them), h2 at its default
# against --warm-threads 0, 5 rounds; then h2's whole GPU suite in the time left.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in hd h2; do rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
timeout 120 /tmp/h2/bin/dlr_gpu_tests --gtest_filter='StartupTiming.KernelsWarmedOnThreadsKeepTheBits' >"$O/warm_test.log" 2>&1
echo "warm test rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED) |warmed on|Failure' "$O/warm_test.log" | head -12
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; [ -f $W ] || /tmp/h2/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_su3
su() { local n=$1; shift
  timeout 100 /tmp/h2/bin/dlbench "$y" --weights $W --size 608 --cache --startup 5 --warm-threads 0,4 "$@" \
    --json "$O/su_$n.json" >"$O/su_$n.txt" 2>&1
  echo "startup $n rc=$? at ${SECONDS}s"; grep -E 'exec to exit|first result' "$O/su_$n.txt" | cut -c1-260; }
su st16 --precision fp16 --mode stream --weights-from storage
su pre16 --precision fp16 --mode preload
su min16 --precision fp16 --mode stream --weight-budget min
su st32 --precision fp32 --mode stream --weights-from storage
one() {  # one: ROUND NAME PREC FLAGS...
  local r=$1 n=$2 p=$3; shift 3
  local t0 t1 rc; t0=$(date +%s%N)
  timeout 30 /tmp/h2/bin/dlrun "$y" $W "$I" --device cuda --precision $p "$@" >/dev/null 2>"$O/err_$n.txt"
  rc=$?; t1=$(date +%s%N)
  echo "$r $n $rc $(( (t1 - t0) / 1000000 ))" >>"$O/runs.txt"
}
: >"$O/runs.txt"
for round in 0 1 2 3 4 5; do
  for k in 4 0; do
    one $round st16_w$k fp16 --mode stream --weights-from storage --warm-threads $k
    one $round st32_w$k fp32 --mode stream --weights-from storage --warm-threads $k
    one $round pre16_w$k fp16 --warm-threads $k
    one $round min16_w$k fp16 --mode stream --weight-budget min --warm-threads $k
  done
done
python3 - "$O/runs.txt" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r, n, rc, ms = l.split()
    if r != '0': d[n].append(int(ms))
for n, v in d.items(): print(f"{n:10s} median {statistics.median(v):6.0f} {v}")
PY
timeout 30 /tmp/h2/bin/dlbench --startup-floor >"$O/floor.txt" 2>&1; cut -c1-200 "$O/floor.txt"
unset DLR_CACHE_DIR
left=$((395 - SECONDS))
if [ $left -gt 60 ]; then
  timeout $left /tmp/h2/bin/dlr_gpu_tests --gtest_filter='-GpuBench.*:StartupTiming.KernelsWarmedOnThreadsKeepTheBits' \
    >"$O/gpu_tests.log" 2>&1
  echo "gpu suite rc=$? at ${SECONDS}s: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test|^\[  SKIPPED \] [0-9]+' "$O/gpu_tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$O/gpu_tests.log" | head -20
  echo "ok: $(grep -cE '^\[       OK \]' "$O/gpu_tests.log"); last: $(grep -E '^\[ RUN      \]' "$O/gpu_tests.log" | tail -1)"
fi
