#!/usr/bin/env bash
# Call 8 (thirty-first session): h5 (h4 + the holder's wait bounded by poll) on another
# host: `dlbench --startup 3 --startup-gpu idle,held` (storage fp16), then call 6's dlrun
# rows idle and held again (4 rounds).
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
v=h5; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"; nvidia-smi -q | grep -iE "persistence|driver version" | tee -a "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_8
st="--mode stream --weights-from storage"; mn="--mode stream --weight-budget min"
timeout 100 $X/dlbench $y --weights $W --device cuda --precision fp16 --cache --startup 3 --startup-gpu idle,held $st \
  --json $O/startup_st.json > $O/startup_st.txt 2>&1; echo "st rc=$? at ${SECONDS}s"
grep -E "startup over|exec to exit" $O/startup_st.txt | cut -c1-200
R="$y $W $I --device cuda"
rows=("st16=$X/dlrun $R --precision fp16 $st" "st32=$X/dlrun $R --precision fp32 $st"
      "pre16=$X/dlrun $R --precision fp16" "pre32=$X/dlrun $R --precision fp32"
      "min16=$X/dlrun $R --precision fp16 $mn" "min32=$X/dlrun $R --precision fp32 $mn"
      "floor=$X/dlbench --startup-floor")
mkdir -p $O/idle $O/held
echo "== idle"; python3 docs/results/h100-2026-12-06c/spawn.py $O/idle 4 "${rows[@]}" 2>&1 | tee "$O/idle/rows.txt"
mkfifo /tmp/hold_in; $X/dlbench --hold-gpu < /tmp/hold_in > $O/held/holder.txt & HP=$!; exec 3>/tmp/hold_in
for i in $(seq 50); do grep -q held $O/held/holder.txt 2>/dev/null && break; sleep 0.1; done; cat $O/held/holder.txt
echo "== held"; python3 docs/results/h100-2026-12-06c/spawn.py $O/held 4 "${rows[@]}" 2>&1 | tee "$O/held/rows.txt"
exec 3>&-; wait $HP; echo "holder rc=$? at ${SECONDS}s"
