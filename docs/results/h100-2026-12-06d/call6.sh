#!/usr/bin/env bash
# Call 6 (thirty-first session): issue 31's one-image rows with the GPU idle and held.
# dlrun exec to exit with one detection of dog (yolov4 @608, caches warm, round 0 fills
# them), every row its own process, 5 rounds, with the floor: first with no other
# process holding the GPU, then beside `dlbench --hold-gpu`; then `dlbench --startup 5
# --startup-gpu idle,held` for storage, preload and the minimum pool, fp16 and fp32.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
v=h4; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"; nvidia-smi -q | grep -iE "persistence|driver version" | tee -a "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_6
R="$y $W $I --device cuda"
st="--mode stream --weights-from storage"; mn="--mode stream --weight-budget min"
rows=("st16=$X/dlrun $R --precision fp16 $st" "st32=$X/dlrun $R --precision fp32 $st"
      "pre16=$X/dlrun $R --precision fp16" "pre32=$X/dlrun $R --precision fp32"
      "min16=$X/dlrun $R --precision fp16 $mn" "min32=$X/dlrun $R --precision fp32 $mn"
      "floor=$X/dlbench --startup-floor")
mkdir -p $O/idle $O/held
echo "== idle"; python3 docs/results/h100-2026-12-06c/spawn.py $O/idle 5 "${rows[@]}" 2>&1 | tee "$O/idle/rows.txt"
mkfifo /tmp/hold_in; $X/dlbench --hold-gpu < /tmp/hold_in > $O/held/holder.txt & HP=$!; exec 3>/tmp/hold_in
for i in $(seq 50); do grep -q held $O/held/holder.txt 2>/dev/null && break; sleep 0.1; done; cat $O/held/holder.txt
echo "== held"; python3 docs/results/h100-2026-12-06c/spawn.py $O/held 5 "${rows[@]}" 2>&1 | tee "$O/held/rows.txt"
exec 3>&-; wait $HP; echo "holder rc=$?"
echo "rows done at ${SECONDS}s"
B="$X/dlbench $y --weights $W --device cuda --precision fp16,fp32 --cache --startup 5 --startup-gpu idle,held"
timeout 100 $B $st --json $O/startup_st.json > $O/startup_st.txt 2>&1; echo "st rc=$? at ${SECONDS}s"
timeout 100 $B --json $O/startup_pre.json > $O/startup_pre.txt 2>&1; echo "pre rc=$? at ${SECONDS}s"
timeout 100 $B $mn --json $O/startup_min.json > $O/startup_min.txt 2>&1; echo "min rc=$? at ${SECONDS}s"
grep -E "startup over|exec to exit" $O/startup_*.txt | cut -c1-200
