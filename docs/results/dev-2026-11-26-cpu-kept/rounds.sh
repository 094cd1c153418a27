#!/bin/bash
# CPU, yolov4 @416: host weights against weights from storage with the minimal host
# budget (every blob read each inference) and with a host budget that keeps the
# largest blobs in memory (read once at open), interleaved in rounds, one process per
# row (the machine is shared: compare rows of one round).
# usage: rounds.sh DLBENCH CFG WEIGHTS PREPARED OUTDIR ROUNDS [BUDGETS] [RATE_GBPS]
# BUDGETS: host budgets, comma-separated (default 100MiB); one row each, kept_<budget>_<round>.
# With RATE_GBPS, each round adds the host run while ../dev-2026-11-25-cpu-storage/
# ratelimit_read.py reads PREPARED with O_DIRECT at that rate (the kept run's own read
# rate): what reading those bytes costs this machine, whatever the order of the reads.
set -u
B=$1; CFG=$2; W=$3; P=$4; OUT=$5; R=$6; BUDGETS=${7:-100MiB}; RATE=${8:-}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
C="$CFG --weights $W --device cpu --size 416 --iters 8 --warmup 1"
S="--weights-from storage --prepared $P --cold"
for r in $(seq 1 "$R"); do
  echo "round $r $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/rounds.txt"
  $B $C --weights-from host --json "$OUT/host_$r.json" > "$OUT/host_$r.log" 2>&1
  $B $C $S --json "$OUT/min_$r.json" > "$OUT/min_$r.log" 2>&1
  for BUDGET in ${BUDGETS//,/ }; do
    $B $C $S --host-budget "$BUDGET" --json "$OUT/kept_${BUDGET}_$r.json" > "$OUT/kept_${BUDGET}_$r.log" 2>&1
  done
  if [ -n "$RATE" ]; then
    python3 "$HERE/../dev-2026-11-25-cpu-storage/ratelimit_read.py" "$P" "$RATE" 9 > "$OUT/rl_$r.txt" &
    $B $C --weights-from host --json "$OUT/hostrl_$r.json" > "$OUT/hostrl_$r.log" 2>&1
    wait
  fi
done
