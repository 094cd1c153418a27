#!/usr/bin/env bash
# Runs on the GPU machine (copy into device-carry/ after scripts/device_prepare.sh):
#   ROUNDS=6 OUT=$OUT bash device-carry/ttfd_ab.sh
# Time to first detection of yolov4 @608 fp16 from storage, warm caches, the startup
# floor / the eager warm-up at open / none, one process each, alternating, ROUNDS rounds.
set -u
B="$PWD/device-carry/bin"; export DLR_SHARED_DIR="$PWD/device-carry/shared"; M="$DLR_SHARED_DIR/models"
export DLR_CACHE_DIR=/tmp/dlrcache-ab
W=/tmp/y4.weights; P=/tmp/y4-fp16.dlrw
[ -f $W ] || "$B/dlgen" "$M/yolov4.cfg" $W >/dev/null
[ -f $P ] || "$B/dlrun" "$M/yolov4.cfg" $W --prepare $P --device cuda --precision fp16 >/dev/null 2>&1
C="$M/yolov4.cfg --weights $W --size 608 --precision fp16 --mode stream --weight-budget min --weights-from storage --zero-copy off --prepared $P --cache --iters 3 --warmup 0"
"$B/dlbench" $C --json $OUT/prime.json > /dev/null 2>&1   # fills the caches
for r in $(seq 1 ${ROUNDS:-6}); do
  "$B/dlbench" --startup-floor --json $OUT/floor_$r.json > /dev/null 2>&1
  "$B/dlbench" $C --warm-up-at-open --json $OUT/warm_$r.json > /dev/null 2>&1
  "$B/dlbench" $C --json $OUT/none_$r.json > /dev/null 2>&1
done
python3 - <<'PY'
import json, os, statistics as st
out = os.environ["OUT"]
rows = {"floor": [], "warm": [], "none": []}
for r in range(1, 100):
    p = f"{out}/warm_{r}.json"
    if not os.path.exists(p): break
    f = json.load(open(f"{out}/floor_{r}.json"))["startup_floor"]
    rows["floor"].append(f.get("process_age_after_ms", f.get("total_ms")))
    for k in ("warm", "none"):
        s = json.load(open(f"{out}/{k}_{r}.json"))["results"][0]["startup"]
        rows[k].append(s["process_age_at_first_result_ms"])
    print(r, "floor %.0f  warm-up %.0f  none %.0f" % (rows["floor"][-1], rows["warm"][-1], rows["none"][-1]))
for k, v in rows.items():
    print(k, "median %.0f  min %.0f  max %.0f" % (st.median(v), min(v), max(v)))
PY
tar czf $OUT/ab.tgz -C $OUT $(cd $OUT && ls *.json)
