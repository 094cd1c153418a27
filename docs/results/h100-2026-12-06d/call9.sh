#!/usr/bin/env bash
# Call 9 (thirty-first session): the final build (h6, main at b47335f) on the device:
# `dlbench --startup 2 --startup-gpu idle,held` for yolov4 @608 preload and storage fp16,
# and the start-up tests.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
v=h6; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/c_9
B="$X/dlbench $y --weights $W --device cuda --precision fp16 --cache --startup 2 --startup-gpu idle,held"
timeout 100 $B --mode stream --weights-from storage --json $O/startup_st.json > $O/startup_st.txt 2>&1; echo "st rc=$? at ${SECONDS}s"
timeout 100 $B --json $O/startup_pre.json > $O/startup_pre.txt 2>&1; echo "pre rc=$? at ${SECONDS}s"
grep -E "startup over|exec to exit" $O/startup_*.txt | cut -c1-200
unset DLR_CACHE_DIR
timeout 150 $X/dlr_gpu_tests --gtest_filter='StartupTiming.*:CublasLoader.*:BackendLoading.*' >"$O/startup_tests.log" 2>&1
echo "startup tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED) ' "$O/startup_tests.log"
