#!/usr/bin/env bash
# A/B of two dlbench builds on the GPU machine, run from the repository root with
# device-carry/ carried (scripts/device_prepare.sh; the other build's dlbench as
# device-carry/bin/dlbench-base). Each row in a process of its own, the two builds
# alternating, REPEATS rounds (default 2); medians of the runs' medians, and new / base.
#   rows:   yolov4 @608: preload fp16 and fp32, stream fp16 at min, 50 % and auto
#   models: yolov4 @608, yolov3 @608, yolov4-tiny @416, yolo-fastest-1.1 @416 (fp16) on one
#           runtime at 40 % (max-slowdown), each model's round-robin run() latency
# Usage: scripts/device_ab.sh PHASE...   (rows, models). JSON and text go to $OUT.
set -u
B="$PWD/device-carry/bin"
export DLR_SHARED_DIR="$PWD/device-carry/shared"
OUT="${OUT:-/tmp/dlrun-out}"
REPEATS="${REPEATS:-2}"
M="$DLR_SHARED_DIR/models"
W="$DLR_SHARED_DIR/weights"
mkdir -p "$OUT"
summary="$OUT/ab_summary.txt"

row_args() {  # the dlbench arguments of a row
  case "$1" in
    preload-fp16) echo "--precision fp16 --mode preload" ;;
    preload-fp32) echo "--precision fp32 --mode preload" ;;
    stream-min) echo "--precision fp16 --mode stream --weight-budget min" ;;
    stream-50) echo "--precision fp16 --mode stream --weight-budget 50%" ;;
    stream-auto) echo "--precision fp16 --mode stream --weight-budget auto" ;;
  esac
}

rows() {
  "$B/dlgen" "$M/yolov4.cfg" /tmp/yolov4.weights >/dev/null || return
  for r in $(seq 1 "$REPEATS"); do
    for row in preload-fp16 preload-fp32 stream-min stream-50 stream-auto; do
      for build in base new; do
        exe="$B/dlbench"; [ "$build" = base ] && exe="$B/dlbench-base"
        # shellcheck disable=SC2046
        timeout 60 "$exe" "$M/yolov4.cfg" --weights /tmp/yolov4.weights --size 608 $(row_args $row) --iters 100 \
          --warmup 20 --json "$OUT/ab_${row}_${build}_$r.json" >"$OUT/ab_${row}_${build}_$r.txt" 2>&1
        echo "$row $build $r rc=$?" >>"$OUT/ab_rc.txt"
      done
    done
  done
}

models() {
  export DLR_CACHE_DIR=/tmp/dlrcache
  local specs="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$W/yolo-fastest-1.1.cfg:$W/yolo-fastest-1.1.weights@416"
  for r in $(seq 1 "$REPEATS"); do
    for build in base new; do
      exe="$B/dlbench"; [ "$build" = base ] && exe="$B/dlbench-base"
      timeout 150 "$exe" --models "$specs" --runtime-budget 40% --split max-slowdown --no-isolate-baselines \
        --json "$OUT/ab_models_${build}_$r.json" >"$OUT/ab_models_${build}_$r.txt" 2>&1
      echo "models $build $r rc=$?" >>"$OUT/ab_rc.txt"
    done
  done
  unset DLR_CACHE_DIR
}

for phase in "$@"; do "$phase"; done
python3 - "$OUT" <<'EOF' | tee "$summary"
import glob, json, os, statistics, sys
out = sys.argv[1]
def med(v): return statistics.median(v) if v else float("nan")
rows = {}
for p in glob.glob(os.path.join(out, "ab_*_*_*.json")):
    name = os.path.basename(p)[3:-5]
    row, build, _ = name.rsplit("_", 2)
    try:
        j = json.load(open(p))
    except Exception:
        continue
    if row == "models":
        for run in j.get("runs", []):
            for m in run.get("models", []):
                rows.setdefault(("model " + m["model"], build), []).append(m["round_robin_ms"])
    else:
        for r in j.get("results", []):
            rows.setdefault((row + " network", build), []).append(r["network"]["median_ms"])
            rows.setdefault((row + " end-to-end", build), []).append(r["end_to_end"]["median_ms"])
names = sorted({k[0] for k in rows})
print("%-34s %9s %9s %8s   (median of the runs' median ms)" % ("row", "base", "new", "new/base"))
for n in names:
    b, w = med(rows.get((n, "base"), [])), med(rows.get((n, "new"), []))
    print("%-34s %9.4f %9.4f %8.4f   base %s new %s" % (n, b, w, w / b if b == b and b > 0 else float("nan"),
          ["%.4f" % x for x in rows.get((n, "base"), [])], ["%.4f" % x for x in rows.get((n, "new"), [])]))
EOF
