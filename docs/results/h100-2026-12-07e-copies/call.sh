#!/usr/bin/env bash
# Forty-second session: pos2 (what starts the slow state of a process's kernels) when
# POS=1; h2d4 (small copies: graph, batch, huge pages; source beside this
# script) when H2D=1, then shard SHARD of SHARDS (default 0 of 1: all) of the GPU suite of build V (h27 = main
# at 97cc480, packed as docs/results/pending-device/README.md says). One tarball.
set -u
O=/tmp/o$SHARD; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/call$SHARD.tgz" -C /tmp o$SHARD; }; trap fin EXIT
v=${V:?name the build}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }
X=/tmp/$v/bin; nvidia-smi -L | tee "$O/gpu.txt"
if [ "${POS:-0}" = 1 ]; then for k in 0 1 2 3 4 5 6 7 8 0 7; do timeout 60 device-carry/scratch/pos2 $k >> $O/pos2.txt 2>&1; done; cat $O/pos2.txt; fin; fi
if [ "${H2D:-0}" = 1 ]; then timeout 120 device-carry/scratch/h2d4 > $O/h2d4.txt 2>&1; echo "h2d4 rc=$? at ${SECONDS}s"; cat $O/h2d4.txt; fin; fi
export DLR_SHARED_DIR="$PWD/device-carry/shared"
(cd $X && GTEST_TOTAL_SHARDS=${SHARDS:-1} GTEST_SHARD_INDEX=$SHARD timeout $((${LIMIT:-560} - SECONDS)) ./dlr_gpu_tests > $O/suite.log 2>&1; echo "suite shard $SHARD rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|^\[  FAILED' $O/suite.log | head -30; grep -cE '^\[       OK' $O/suite.log
