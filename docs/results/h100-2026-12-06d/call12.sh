#!/usr/bin/env bash
# Call 12 (thirty-first session): the kept cuDNN graph plans loaded on four threads (h7)
# against main at b47335f (h6): the GPU tests of fusion, plan loading and start-up, one
# debug open, then dlrun exec to exit with one detection of dog beside a held GPU
# (storage and preload fp16, 6 rounds, both builds interleaved) and the floor.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in h6 h7; do rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
(cd /tmp/h7/bin && timeout 200 ./dlr_gpu_tests --gtest_filter='StartupTiming.*:FusionGpu.*:FusedConvTest.*:ConvFusion.*:ConvAlgoCacheGpu.*:CudaEngine.*' > $O/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED) |warmed on' $O/tests.log | cut -c1-200
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/h7/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_12
R="$y $W $I --device cuda --precision fp16"; st="--mode stream --weights-from storage"
/tmp/h7/bin/dlrun $R $st > /dev/null 2>&1  # fills the caches
/tmp/h7/bin/dlrun $R $st --log-level debug 2>&1 | grep -E "graph plans|convolutions in|warmed" | cut -c1-250 | tee $O/debug.txt
mkfifo /tmp/hold_in; /tmp/h7/bin/dlbench --hold-gpu < /tmp/hold_in > $O/holder.txt & HP=$!; exec 3>/tmp/hold_in
for i in $(seq 50); do grep -q held $O/holder.txt 2>/dev/null && break; sleep 0.1; done; cat $O/holder.txt
rows=()
for v in h6 h7; do rows+=("${v}_st16=/tmp/$v/bin/dlrun $R $st" "${v}_pre16=/tmp/$v/bin/dlrun $R"); done
python3 docs/results/h100-2026-12-06c/spawn.py $O 6 "${rows[@]}" "floor=/tmp/h7/bin/dlbench --startup-floor" 2>&1 | tee "$O/rows.txt"
exec 3>&-; wait $HP; echo "holder rc=$? at ${SECONDS}s"
timeout 60 /tmp/h7/bin/dlbench $y --weights $W --device cuda --precision fp16 --cache --startup 3 --startup-gpu held $st \
  --json $O/startup_st.json > $O/startup_st.txt 2>&1; echo "startup rc=$? at ${SECONDS}s"
grep -E "exec to exit|first result" $O/startup_st.txt | cut -c1-250
