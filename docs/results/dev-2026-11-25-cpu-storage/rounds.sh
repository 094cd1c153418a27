#!/bin/bash
# CPU host vs storage, interleaved in rounds (the machine is shared: compare rows of one round).
# usage: rounds.sh DLBENCH CFG WEIGHTS PREPARED OUTDIR ROUNDS [RATE_GBPS]
# Per round, one process each: host weights; storage --prefetch-reads off; on; host weights
# while ratelimit_read.py reads PREPARED with O_DIRECT at RATE_GBPS (default 0.42, the
# storage run's own average rate) - the I/O contention no ordering of the reads removes.
set -u
B=$1; CFG=$2; W=$3; P=$4; OUT=$5; R=$6; RATE=${7:-0.42}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
C="$CFG --weights $W --device cpu --size 416 --iters 8 --warmup 1"
S="--weights-from storage --prepared $P --cold"
for r in $(seq 1 "$R"); do
  echo "round $r $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/rounds.txt"
  $B $C --weights-from host --json "$OUT/host_$r.json" > "$OUT/host_$r.log" 2>&1
  $B $C $S --prefetch-reads off --json "$OUT/off_$r.json" > "$OUT/off_$r.log" 2>&1
  $B $C $S --prefetch-reads on --json "$OUT/on_$r.json" > "$OUT/on_$r.log" 2>&1
  python3 "$HERE/ratelimit_read.py" "$P" "$RATE" 9 > "$OUT/rl_$r.txt" &
  $B $C --weights-from host --json "$OUT/hostrl_$r.json" > "$OUT/hostrl_$r.log" 2>&1
  wait
done
