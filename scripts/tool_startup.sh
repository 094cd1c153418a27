#!/usr/bin/env bash
# Start-up cost of dlrun as a user meets it: wall time (exec to exit, by date +%s%N)
# and peak RSS (/usr/bin/time -f %M) of `--help`, `--version`, a detection of a .ppm
# (no image codec needed) and of a JPEG, each the median of N runs after one checked
# run, for each dlrun given (compare builds in one run; dlimage beside the first). Prints a table; --json FILE writes the figures.
# Usage: scripts/tool_startup.sh [-n N] [--json FILE] DLRUN [DLRUN...]
#   needs DLR_SHARED_DIR (default ../shared) for yolo-fastest-1.1 and images/dog.jpg
set -euo pipefail
n=21
json=""
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n="$2"; shift 2 ;;
    --json) json="$2"; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-n N] [--json FILE] DLRUN [DLRUN...]" >&2; exit 2; }
src="$(cd "$(dirname "$0")/.." && pwd)"
shared="${DLR_SHARED_DIR:-$src/../shared}"
net=("$shared/weights/yolo-fastest-1.1.cfg" "$shared/weights/yolo-fastest-1.1.weights")
tmp="$(mktemp -d "${TMPDIR:-/tmp}/tool_startup.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# dog.jpg as a .ppm, by the first dlrun's dlimage.
"$(dirname "$1")/dlimage" convert "$shared/images/dog.jpg" "$tmp/dog.ppm" >/dev/null

# One run: "wall_ms rss_kb".
one() {
  local s e
  s=$(date +%s%N)
  /usr/bin/time -o "$tmp/t" -f "%M" "$@" >/dev/null 2>&1
  e=$(date +%s%N)
  echo "$(( (e - s) / 1000 )) $(tail -1 "$tmp/t")"
}
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

declare -A cases=(
  [help]="--help"
  [version]="--version"
  [detect_ppm]="${net[*]} $tmp/dog.ppm --threads 1"
  [detect_jpeg]="${net[*]} $shared/images/dog.jpg --threads 1"
)
order=(help version detect_ppm detect_jpeg)
rows=()
printf "%-50s %-12s %10s %10s\n" dlrun case "wall ms" "rss kB"
for bin in "$@"; do
  for c in "${order[@]}"; do
    # shellcheck disable=SC2086
    "$bin" ${cases[$c]} >/dev/null 2>"$tmp/err" || { echo "$bin ${cases[$c]}: failed: $(cat "$tmp/err")" >&2; exit 1; }
    # shellcheck disable=SC2086
    for _ in $(seq "$n"); do one "$bin" ${cases[$c]}; done >"$tmp/runs"
    wall=$(awk '{print $1 / 1000}' "$tmp/runs" | median)
    rss=$(awk '{print $2}' "$tmp/runs" | median)
    printf "%-50s %-12s %10.1f %10d\n" "$bin" "$c" "$wall" "$rss"
    rows+=("{\"dlrun\":\"$bin\",\"case\":\"$c\",\"runs\":$n,\"wall_ms_median\":$wall,\"rss_kb_median\":$rss}")
  done
done
if [ -n "$json" ]; then
  (IFS=,; echo "{\"host\":\"$(hostname)\",\"nproc\":$(nproc),\"rows\":[${rows[*]}]}") >"$json"
fi
