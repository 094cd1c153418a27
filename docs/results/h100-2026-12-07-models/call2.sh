#!/usr/bin/env bash
# Written in the thirty-fifth session, when its device time ran out during the suite: the
# whole GPU suite of main with layers staged whole (build V, default h17 = main at 4ce1feb
# or later; rebuild and park it as pending-device/README.md says). Everything in one
# tarball under $OUT, written as the suite goes (a call returns at most 8 files).
set -u
O=/tmp/os; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp os; }; trap fin EXIT
v=${V:-h21}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
export DLR_SHARED_DIR="$PWD/device-carry/shared"
(cd $X && timeout 540 ./dlr_gpu_tests > $O/tests.log 2>&1; echo "suite rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|^\[  FAILED' $O/tests.log
