#!/usr/bin/env bash
# Call 1 (thirty-second session): storage reads that take the bytes the page cache holds
# from it (h9 = main + cache hits) against h8 (main before it, ae06fe9's code). The
# storage GPU tests of h9; steady-state storage rows with cache hits on and off (page
# cache warm) and cold; then issue 31's one-image rows (dlrun exec to exit with one
# detection of dog, yolov4 @608, caches warm, round 0 fills them), builds interleaved,
# 5 rounds beside a held GPU and 4 with it idle, with the floor; then dlbench's start-up
# breakdown of storage fp16, cache hits on and off, held.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in h8 h9; do rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"; (uname -r; df -T /tmp | tail -1; nproc) | tee -a "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/h9/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_1
(cd /tmp/h9/bin && timeout 60 ./dlr_runtime_tests --gtest_filter="BlockReader*:StorageCpu*" > $O/cpu_tests.log 2>&1; echo "cpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " $O/cpu_tests.log)
(cd /tmp/h9/bin && timeout 150 ./dlr_gpu_tests --gtest_filter='*Storage*:*ZeroCopy*:*Int8*:StartupTiming.*' > $O/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran' $O/tests.log
X=/tmp/h9/bin; P=/tmp/y4-fp16.dlrw
$X/dlrun $y $W --prepare $P --device cuda --precision fp16 > /dev/null 2>&1
B="$X/dlbench $y --weights $W --size 608 --mode stream --weight-budget min --weights-from storage --cache --iters 20 --warmup 2"
timeout 120 $B --precision fp16,fp32 --cache-hits on,off --json $O/steady.json > $O/steady.txt 2>&1; echo "steady rc=$? at ${SECONDS}s"
timeout 60 $B --precision fp16 --prepared $P --cold --json $O/cold.json > $O/cold.txt 2>&1; echo "cold rc=$? at ${SECONDS}s"
grep -E "^cuda|read .* MiB/inference" $O/steady.txt $O/cold.txt | cut -c1-330
R="$y $W $I --device cuda"; st="--mode stream --weights-from storage"
rows=()
for v in h8 h9; do rows+=("${v}_st16=/tmp/$v/bin/dlrun $R --precision fp16 $st" "${v}_st32=/tmp/$v/bin/dlrun $R --precision fp32 $st"); done
rows+=("h9_st16direct=$X/dlrun $R --precision fp16 $st --cache-hits off" "h9_pre16=$X/dlrun $R --precision fp16"
       "floor=$X/dlbench --startup-floor")
mkdir -p $O/held $O/idle
echo "== idle"; python3 docs/results/h100-2026-12-06c/spawn.py $O/idle 4 "${rows[@]}" 2>&1 | tee "$O/idle/rows.txt"
mkfifo /tmp/hold_in; $X/dlbench --hold-gpu < /tmp/hold_in > $O/held/holder.txt & HP=$!; exec 3>/tmp/hold_in
for i in $(seq 50); do grep -q held $O/held/holder.txt 2>/dev/null && break; sleep 0.1; done; cat $O/held/holder.txt
echo "== held"; python3 docs/results/h100-2026-12-06c/spawn.py $O/held 5 "${rows[@]}" 2>&1 | tee "$O/held/rows.txt"
exec 3>&-; wait $HP; echo "holder rc=$? rows done at ${SECONDS}s"
timeout 120 $X/dlbench $y --weights $W --device cuda --precision fp16 --cache --startup 4 --startup-gpu held $st \
  --cache-hits on,off --json $O/startup_st.json > $O/startup_st.txt 2>&1; echo "startup rc=$? at ${SECONDS}s"
grep -A3 -E "storage" $O/startup_st.txt | cut -c1-260
