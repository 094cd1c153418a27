#!/usr/bin/env bash
# Pending call 3 (twenty-ninth session; not run: the device time was spent): does a one-image run reach its detection sooner without
# a CUDA graph? Build h2 (main with the kernels warmed at open). dlrun exec to exit with
# one detection of dog (yolov4 @608, caches warm, round 0 fills them), default (graph
# captured at open) against --no-graph (the first inference enqueued eagerly), storage
# fp16 and fp32, preload fp16, 5 rounds.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
rm -rf /tmp/h2; mkdir -p /tmp/h2; tar xJf device-carry/h2.tar.xz -C /tmp/h2
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/h2/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_su4
one() {  # one: ROUND NAME PREC FLAGS...
  local r=$1 n=$2 p=$3; shift 3
  local t0 t1 rc; t0=$(date +%s%N)
  timeout 30 /tmp/h2/bin/dlrun "$y" $W "$I" --device cuda --precision $p "$@" >/dev/null 2>"$O/err_$n.txt"
  rc=$?; t1=$(date +%s%N)
  echo "$r $n $rc $(( (t1 - t0) / 1000000 ))" >>"$O/runs.txt"
}
: >"$O/runs.txt"
for round in 0 1 2 3 4 5; do
  for g in graph nograph; do
    f=(); [ $g = nograph ] && f=(--no-graph)
    one $round st16_$g fp16 --mode stream --weights-from storage "${f[@]}"
    one $round pre16_$g fp16 "${f[@]}"
    one $round st32_$g fp32 --mode stream --weights-from storage "${f[@]}"
  done
done
python3 - "$O/runs.txt" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r, n, rc, ms = l.split()
    if r != '0': d[n].append(int(ms) if rc == '0' else -int(ms))
for n, v in d.items(): print(f"{n:14s} median {statistics.median(v):6.0f} {v}")
PY
timeout 20 /tmp/h2/bin/dlbench --startup-floor 2>&1 | cut -c1-220
echo "end at ${SECONDS}s"
