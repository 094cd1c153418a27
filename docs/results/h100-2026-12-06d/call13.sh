#!/usr/bin/env bash
# Call 13 (thirty-first session): h8 = h7 + the warm-up on the plan loaders' handles, and
# no parallel loading on a Runtime's engines. Its GPU tests of plan loading and start-up;
# dlrun's device memory taken by opening (h6 against h8, preload and storage fp16); then
# the one-image rows beside a held GPU, both builds interleaved, 5 rounds.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in h6 h8; do rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
(cd /tmp/h8/bin && timeout 120 ./dlr_gpu_tests --gtest_filter='StartupTiming.*:FusionGpu.PlansKept*:FusionGpu.RuntimeEngines*:ConvAlgoCacheGpu.*' > $O/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED) ' $O/tests.log
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/h8/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_13
R="$y $W $I --device cuda --precision fp16"; st="--mode stream --weights-from storage"
for v in h6 h8; do for m in "" "$st"; do /tmp/$v/bin/dlrun $R $m --summary always 2>&1 >/dev/null | grep -E "device memory taken" | sed "s/^/$v ${m:-preload}: /"; done; done | tee $O/memory.txt
/tmp/h8/bin/dlrun $R $st --log-level debug 2>&1 | grep -E "graph plans|warmed" | cut -c1-200
mkfifo /tmp/hold_in; /tmp/h8/bin/dlbench --hold-gpu < /tmp/hold_in > $O/holder.txt & HP=$!; exec 3>/tmp/hold_in
for i in $(seq 50); do grep -q held $O/holder.txt 2>/dev/null && break; sleep 0.1; done; cat $O/holder.txt
rows=()
for v in h6 h8; do rows+=("${v}_st16=/tmp/$v/bin/dlrun $R $st" "${v}_pre16=/tmp/$v/bin/dlrun $R"); done
python3 docs/results/h100-2026-12-06c/spawn.py $O 5 "${rows[@]}" 2>&1 | tee "$O/rows.txt"
exec 3>&-; wait $HP; echo "holder rc=$? at ${SECONDS}s"
