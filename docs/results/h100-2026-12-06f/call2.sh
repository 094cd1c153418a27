#!/usr/bin/env bash
# Thirty-third session (written), run in the thirty-fourth as call 2: the whole GPU suite of build V (default h12: main at fd6d6ed; h11 was main at
# 73b77c0, with the early compile and cache hits, whose suite has not run whole).
set -u
O=/tmp/o2; rm -rf $O; mkdir -p $O; fin() { gzip -f $O/tests.log; cp $O/* "$OUT/"; }; trap fin EXIT
v=${V:-h12}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
export DLR_SHARED_DIR="$PWD/device-carry/shared"
(cd $X && timeout 500 ./dlr_gpu_tests > $O/tests.log 2>&1; echo "suite rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|^\[  FAILED' $O/tests.log
