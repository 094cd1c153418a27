#!/usr/bin/env bash
# Call 1b (twenty-eighth session; more rounds of call 1s' rows on the same card, right after it; call 1 shortened for a small device budget: no s2c for nb, no
# s3d16, no profiled dlrun, no fp32 rows), three builds: nb = main at 9b1cb1f (nb.tar.xz); nc = nb +
# the reader checking each unit's CRC32C after publishing it, in the time it would wait
# (run from nx.tar.xz without the variable); nx = nc with the checks switched off by DLR_EXPERIMENT_NO_CHECK (nx.tar.xz,
# an experiment build, not on main: the rows' bound without any check). Issue 30's
# storage rows within 8 MiB, each its own dlbench process, 2 interleaved rounds after one
# that makes the prepared files, with the disk's own pass (8 x 1 MiB) before and after:
#   s3  = 1 MiB slots + 6 MiB staging: nb, nc, nx;
#   s4  = 512 KiB slots + 7 MiB staging: nb, nc;
#   s2c = 2 MiB slots + 4 MiB staging, 1 MiB units (--units chunks:1MiB): nb, nc;
#   s5  = 1 MiB slots + 5 MiB staging (7 MiB in all): nc;
#   s3d16 = s3 with 16 reads in flight instead of 8: nc.
# Then one profiled dlrun per build (s3) and nc's GPU tests of the storage paths.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in nb nx; do mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done; ln -s /tmp/nx /tmp/nc  # nc = nx without the variable
nvidia-smi -L | tee "$O/gpu.txt"; nproc; grep -m1 'model name' /proc/cpuinfo
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/nc/bin/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/c_st
row() { local v=$1 n=$2 slot=$3 host=$4; shift 4
  local e=(); [ "$v" = nx ] && e=(env DLR_EXPERIMENT_NO_CHECK=1)
  timeout 60 "${e[@]}" /tmp/$v/bin/dlbench "$y" --weights $W --size 608 --precision fp16 --mode stream \
  --weight-budget min --weights-from storage --slot-size "$slot" --host-budget "$host" --slice-by channels --cold \
  --iters 20 --warmup 2 "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s: $(grep -E '^cuda' "$O/$n.txt" | cut -c42-60) $(grep -oE 'last read landed at [0-9.]+ ms' "$O/$n.txt")"; }
newest() { find $DLR_CACHE_DIR/prepared -name 'yolov4-*.dlrw' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2; }
disk() { timeout 30 /tmp/nc/bin/dlprobe --storage-only --storage-file "$1" --storage-passes 20 --read-depth 8 \
  --read-block 1MiB --json "$O/$2.json" >"$O/$2.txt" 2>&1; echo "$2 $(grep -E '^ +p50' "$O/$2.txt")"; }
row nc s4_0 512KiB 7MiB; f=$(newest); echo "file: $f"
for r in 1 2 3 4; do
  disk "$f" d8b1_a$r
  row nb s4_nb_$r 512KiB 7MiB; row nc s4_nc_$r 512KiB 7MiB; row nb s3_nb_$r 1MiB 6MiB; row nc s3_nc_$r 1MiB 6MiB
  disk "$f" d8b1_b$r
done
