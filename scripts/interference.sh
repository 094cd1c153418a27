#!/usr/bin/env bash
# Latency under interference (issue 35, deliverable 1): per-inference latency of dlrun
# (its "Predicted in X milli-seconds" per frame: the network, not decoding) over a list of
# N copies of one image, per mode, alone and beside one kind of interference at a time:
#   cpu   one busy loop per host core at normal priority
#   gpu   a second process running yolov4 @608 fp16 on the same GPU (dlbench, preload)
#   disk  a second process reading a 2 GiB file from the same disk with direct I/O
# Writes OUT/interference.json ({condition: {mode: {n, p50, p90, p99, p99_9, max}}} in ms)
# and prints a table. Runs on the GPU machine from the repository root with
# device-carry/ (scripts/device_prepare.sh). Usage: scripts/interference.sh [OUT]
# N_FAST (2000): inferences of the GPU-resident and host-streamed modes; N_SLOW (500): of
# storage and zero copy (each ~0.07-0.1 s; any count, e.g. 2000: ~2.5 min a row); MODES and
# CONDITIONS: subsets, space-separated (modes: preload stream-min stream-50 storage
# zero-copy models models-ring). Storage and zero copy read with --cache-hits off, from the
# disk whatever the page cache holds, as the disk's own passes do.
# The disk's own spread: in each condition, right before its first storage or zero-copy
# row, `dlprobe --storage-only --storage-passes DISK_PASSES` (default N_SLOW; 0: none)
# reads the prepared weight file those rows read (whole, ~the bytes of one inference; the
# read plan's MiB per inference is recorded beside it) with their reader, depth and block,
# pass after pass: row "disk-spread" of the condition (the same statistics, the first 5
# passes dropped like the first 5 frames), and a line setting the storage rows' p99/p50
# beside the disk's. ROUNDS (default 1): the disk's passes and the storage and zero-copy
# rows of a condition run as ROUNDS rounds of one ROUNDS-th of their count each (disk,
# storage, zero copy, disk, ...), pooled, so that a disk whose throughput drifts over
# minutes is seen by all three alike; the JSON keeps each round's p50 (round_p50).
# The prepared file is made first by a one-frame storage run whose
# plan goes to OUT/plan_storage.txt. DISK_FLAGS: more dlprobe flags (e.g. --read-depth 4
# when EXTRA_FLAGS changes dlrun's).
# A mode may carry thread placements after '+' (docs/library.md, "Thread priority and CPU
# placement"): +high (--thread-priority high), +rt (realtime), +pin (--cpu-affinity
# $PIN_CPUS, default the last CPU), +noahead (--prefetch-reads off), +nograph (--no-graph:
# the engine's thread enqueues each inference), e.g. MODES="preload
# preload+rt storage storage+rt+pin" compares them under the same hog in one run.
# EXTRA_FLAGS: more dlrun flags for every run. DLR_BIN: the folder of the dlrun, dlbench,
# dlprobe and dlgen to run (default device-carry/bin), e.g. to compare two builds.
set -u
B="${DLR_BIN:-$PWD/device-carry/bin}"
S="$PWD/device-carry/shared"
OUT="${1:-${OUT:-/tmp/interference}}"
mkdir -p "$OUT"
W=/tmp/y4.weights
W2=/tmp/y4tiny.weights  # the second model of the models modes
[ -f $W ] || "$B/dlgen" "$S/models/yolov4.cfg" $W >/dev/null
[ -f $W2 ] || "$B/dlgen" "$S/models/yolov4-tiny.cfg" $W2 >/dev/null
IMG="$S/images/dog.ppm"
list() { local f="$OUT/list_$1.txt"; [ -f "$f" ] || for _ in $(seq "$1"); do echo "$IMG"; done > "$f"; echo "$f"; }

# A mode's dlrun flags: its base's, then its placements'.
flags_of() {
  local base="${1%%+*}" extra="" v extras
  IFS=+ read -ra extras <<<"${1#"$base"}"
  for v in "${extras[@]}"; do
    case $v in
      "") ;;
      high) extra+=" --thread-priority high" ;;
      rt) extra+=" --thread-priority realtime" ;;
      pin) extra+=" --cpu-affinity ${PIN_CPUS:-$(($(nproc) - 1))}" ;;
      noahead) extra+=" --prefetch-reads off" ;;
      nograph) extra+=" --no-graph" ;;
      *) echo "unknown placement +$v in mode $1" >&2; return 2 ;;
    esac
  done
  base_flags_of "$base" >/dev/null || return 2
  echo "$(base_flags_of "$base")$extra ${EXTRA_FLAGS:-}"
}
base_flags_of() {
  case $1 in
    preload) echo "" ;;
    stream-min) echo "--mode stream --weight-budget min" ;;
    stream-50) echo "--mode stream --weight-budget 50%" ;;
    storage) echo "--mode stream --weights-from storage --zero-copy off --cache-hits off" ;;
    zero-copy) echo "--mode stream --weights-from storage --zero-copy on --cache-hits off" ;;
    models) echo "$(two_models) --runtime-budget all" ;;
    models-ring) echo "$(two_models) --runtime-budget ${RING_BUDGET:-200MiB}" ;;
    *) echo "unknown mode $1" >&2; return 2 ;;
  esac
}
# Several models on one runtime (dlrun --model): yolov4 @608 and yolov4-tiny @416, every
# frame through both; the latency is reported per model ("models[yolov4@608]").
# models: --runtime-budget all (resident); models-ring: RING_BUDGET (default 200MiB),
# where the runtime streams through its shared ring.
two_models() { echo "--model $S/models/yolov4.cfg:$W@608 --model $S/models/yolov4-tiny.cfg:$W2@416"; }
count_of() { case ${1%%+*} in storage|zero-copy) echo "${N_SLOW:-500}" ;; *) echo "${N_FAST:-2000}" ;; esac; }
is_disk_mode() { case ${1%%+*} in storage|zero-copy) return 0 ;; *) return 1 ;; esac; }
ROUNDS=${ROUNDS:-1}
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS=$ROUNDS: expected a count >= 1"; exit 2; }

hogs=()
start_interference() {
  case $1 in
    alone) ;;
    cpu) for _ in $(seq "$(nproc)"); do (while :; do :; done) & hogs+=($!); done ;;
    gpu) (while :; do "$B/dlbench" "$S/models/yolov4.cfg" --synthetic --size 608 --precision fp16 --iters 100000 \
           --warmup 0 || exit; done) >"$OUT/hog_gpu.txt" 2>&1 & hogs+=($!); sleep 8
         kill -0 "${hogs[-1]}" 2>/dev/null || { echo "the GPU hog stopped: $(tail -1 "$OUT/hog_gpu.txt")"; exit 1; }
         # The second process on the GPU, seen by the driver (kept with the results).
         nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv >"$OUT/hog_gpu_smi.txt" 2>&1
         nvidia-smi --query-gpu=utilization.gpu --format=csv -l 1 >>"$OUT/hog_gpu_smi.txt" 2>&1 & hogs+=($!) ;;
    disk) [ -f /tmp/disk_hog.bin ] || dd if=/dev/urandom of=/tmp/disk_hog.bin bs=1M count=2048 status=none
          (while :; do dd if=/tmp/disk_hog.bin of=/dev/null bs=1M iflag=direct status=none; done) & hogs+=($!) ;;
  esac
}
stop_interference() {
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; pkill -P "$p" 2>/dev/null; done
  wait 2>/dev/null; hogs=()
}

# The prepared file the storage rows read: made (if absent) by one frame of the storage
# mode, whose plan gives the bytes read per inference.
prepared=""
prepare_storage() {
  [ -n "$prepared" ] && return 0
  # shellcheck disable=SC2086,SC2046
  "$B/dlrun" "$S/models/yolov4.cfg" $W "$IMG" --device cuda --precision fp16 $(base_flags_of storage) ${EXTRA_FLAGS:-} \
    --print-plan >"$OUT/plan_storage.txt" 2>"$OUT/err_plan_storage.txt" || echo "storage plan run rc=$?"
  # shellcheck disable=SC2012
  prepared=$(ls -t "$DLR_CACHE_DIR"/prepared/yolov4-*.dlrw 2>/dev/null | head -1)
  [ -n "$prepared" ] || echo "no prepared yolov4 file in $DLR_CACHE_DIR/prepared: no disk-spread rows"
  [ -n "$prepared" ]
}
# The disk's own spread in condition $1, round $2 (of ROUNDS), before its storage rows.
disk_spread() {
  local passes=$(( ${DISK_PASSES:-${N_SLOW:-500}} / ROUNDS )) json="$OUT/disk_$1.r$2.json"
  [ "$passes" -gt 0 ] && [ ! -f "$json" ] && prepare_storage || return 0
  # shellcheck disable=SC2086
  "$B/dlprobe" --storage-only --storage-file "$prepared" --storage-passes "$passes" \
    --json "$json" ${DISK_FLAGS:-} >"$OUT/disk_$1.r$2.txt" 2>&1
  echo "$1 disk-spread round $2 rc=$? $(grep -E '^p99/p50' "$OUT/disk_$1.r$2.txt")"
}
# One row: dlrun over a list of $3 frames in condition $1, mode $2; output lat_$1_$2$4.txt.
row() {
  local net="$S/models/yolov4.cfg $W"
  case $2 in models*) net="" ;; esac
  # shellcheck disable=SC2086,SC2046
  "$B/dlrun" $net --list "$(list "$3")" --device cuda --precision fp16 \
    $(flags_of "$2") >"$OUT/lat_$1_$2$4.txt" 2>"$OUT/err_$1_$2$4.txt"
  echo "$1 $2$4 rc=$?"
}

for mode in ${MODES:-preload stream-min stream-50 storage zero-copy}; do flags_of "$mode" >/dev/null || exit 2; done
export DLR_CACHE_DIR=/tmp/dlrcache-interference
rm -f "$OUT"/disk_*.json
for cond in ${CONDITIONS:-alone cpu gpu disk}; do
  rm -f "$OUT/lat_${cond}_"*.txt
  start_interference "$cond"
  for mode in ${MODES:-preload stream-min stream-50 storage zero-copy}; do
    is_disk_mode "$mode" || row "$cond" "$mode" "$(count_of "$mode")" ""
  done
  for r in $(seq "$ROUNDS"); do  # the disk's passes and the rows that read the disk, in rounds
    for mode in ${MODES:-preload stream-min stream-50 storage zero-copy}; do
      is_disk_mode "$mode" || continue
      disk_spread "$cond" "$r"
      row "$cond" "$mode" $(( $(count_of "$mode") / ROUNDS )) ".r$r"
    done
  done
  stop_interference
done
python3 - "$OUT" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
res = {}
def quantiles(v):  # nearest rank
    v = sorted(v)
    q = lambda p: v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
    return {"n": len(v), "p50": q(50), "p90": q(90), "p99": q(99), "p99_9": q(99.9), "max": v[-1]}
pooled = {}  # (cond, key) -> per file (round): its values, the first five dropped
for f in sorted(glob.glob(f"{out}/lat_*.txt")):
    cond, mode = os.path.basename(f)[4:-4].split("_", 1)
    mode = re.sub(r"\.r[0-9]+$", "", mode)
    per_model = {}  # "" for one model, else the --model tag
    for tag, ms in re.findall(r"^(?:\[([^\]]+)\] )?.*Predicted in ([0-9.]+) milli-seconds", open(f).read(), re.M):
        per_model.setdefault(tag, []).append(float(ms))
    for tag, v in per_model.items():
        if len(v) < 20: continue
        key = f"{mode}[{tag}]" if tag else mode
        pooled.setdefault((cond, key), []).append(v[5:])  # the first five frames fill caches and capture graphs
for (cond, key), runs in pooled.items():
    r = quantiles([x for v in runs for x in v])
    if len(runs) > 1: r["round_p50"] = [quantiles(v)["p50"] for v in runs]
    res.setdefault(cond, {})[key] = r
# The disk's own spread (dlprobe --storage-passes on the storage rows' prepared file).
plan = open(f"{out}/plan_storage.txt").read() if os.path.exists(f"{out}/plan_storage.txt") else ""
m = re.search(r"^read plan: .* of ([0-9.]+) MiB per inference", plan, re.M)
disk = {}  # cond -> the rounds' JSON
for f in sorted(glob.glob(f"{out}/disk_*.r*.json")):
    cond = re.match(r"disk_(.*)\.r[0-9]+\.json$", os.path.basename(f)).group(1)
    d = json.load(open(f))
    if len(d["pass_ms"]) >= 20: disk.setdefault(cond, []).append(d)
for cond, ds in disk.items():
    d, runs = ds[0], [x["pass_ms"][5:] for x in ds]
    r = quantiles([x for v in runs for x in v])
    if len(runs) > 1: r["round_p50"] = [quantiles(v)["p50"] for v in runs]
    res.setdefault(cond, {})["disk-spread"] = dict(
        r, file=d["file"], pass_mib=d["pass_bytes"] / 2**20,
        read_plan_mib=float(m.group(1)) if m else None, reader=d["reader"], read_depth=d["read_depth"],
        read_block_bytes=d["read_block_bytes"], mbps_at_p50=d["pass_bytes"] / (r["p50"] * 1e3))
json.dump(res, open(f"{out}/interference.json", "w"), indent=1)
print("%-6s %-28s %5s %8s %8s %8s %8s %8s %7s" % ("cond", "mode", "n", "p50", "p90", "p99", "p99.9", "max", "p99/p50"))
for cond in ("alone", "cpu", "gpu", "disk"):
    for mode, r in res.get(cond, {}).items():
        print("%-6s %-28s %5d %8.2f %8.2f %8.2f %8.2f %8.2f %7.2f" % (cond, mode, r["n"], r["p50"], r["p90"], r["p99"],
              r["p99_9"], r["max"], r["p99"] / r["p50"]))
for cond in ("alone", "cpu", "gpu", "disk"):
    d = res.get(cond, {}).get("disk-spread")
    if not d: continue
    rows = ", ".join("%s %.2f" % (k, r["p99"] / r["p50"]) for k, r in res[cond].items()
                     if k.split("+")[0] in ("storage", "zero-copy"))
    print("%s: p99/p50 %s; the disk's own %.2f over the same %.2f MiB (read plan: %s MiB per inference), %d passes, "
          "p50 %.2f ms (%.0f MB/s)" % (cond, rows or "(no storage rows)", d["p99"] / d["p50"], d["pass_mib"],
          "%.2f" % d["read_plan_mib"] if d["read_plan_mib"] else "?", d["n"], d["p50"], d["mbps_at_p50"]))
for cond in ("alone", "cpu", "gpu", "disk"):
    for mode, r in res.get(cond, {}).items():
        if "round_p50" in r: print("%s %s: p50 per round %s" % (cond, mode, " ".join("%.1f" % x for x in r["round_p50"])))
PY
