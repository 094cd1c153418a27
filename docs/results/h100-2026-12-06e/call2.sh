#!/usr/bin/env bash
# Call 2 (thirty-second session): the whole GPU suite of h9 (main at 0b083ec: cache hits,
# and ae06fe9's plans loaded on threads, whose suite had not run); then the kernels'
# warm-up on 2, 4, 8 and 16 threads (dlbench --startup, storage and preload fp16, held).
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
v=h9; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
(cd $X && timeout 450 ./dlr_gpu_tests > $O/tests.log 2>&1; echo "suite rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|^\[  FAILED' $O/tests.log
export DLR_CACHE_DIR=/tmp/c_2
timeout 100 $X/dlbench $y --weights $W --device cuda --precision fp16 --cache --startup 3 --startup-gpu held \
  --mode stream --weights-from storage --warm-threads 2,4,8,16 --json $O/warm_st.json > $O/warm_st.txt 2>&1
echo "warm rc=$? at ${SECONDS}s"; grep -A1 -E "storage" $O/warm_st.txt | cut -c1-240
