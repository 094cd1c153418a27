#!/usr/bin/python3
"""Latency-under-interference plot (SVG, standard library only) from interference.json.

usage: plot_interference.py OUT.svg INTERFERENCE.json [INTERFERENCE.json ...]
Each JSON is scripts/interference.sh's ({condition: {mode: {n, p50, p90, p99, p99_9,
max}}}, ms). One row per file (its folder's name), condition and mode, its latencies divided by the alone p50 of
the same mode without thread placements (preload+high -> preload; per model for the
models modes) from the same file: a bar to p50, a bar to p99, a tick at p99.9, and
issue 35's 1.15 (alone) and 1.5 (beside a CPU hog) lines. Rows with no alone baseline
are left out. Exit 1 when there is nothing to plot.
"""
import json
import os
import re
import sys

ROW_H, LEFT, WIDTH, X_MAX = 16, 330, 520, 3.0


def base_of(mode):
    """preload+high -> preload; models+high[yolov4@608] -> models[yolov4@608]."""
    m = re.match(r"([^+\[]+)(?:\+[^\[]*)?(\[.*\])?$", mode)
    return m.group(1) + (m.group(2) or "")


def rows_of(path):
    label = os.path.basename(os.path.dirname(os.path.abspath(path)))  # which run
    data = json.load(open(path))
    alone = data.get("alone", {})
    out = []
    for cond, modes in data.items():
        for mode, r in sorted(modes.items()):
            base = alone.get(base_of(mode))
            if base and base["p50"] > 0:
                out.append((f"{label}: {cond}  {mode}", r["p50"] / base["p50"], r["p99"] / base["p50"], r["p99_9"] / base["p50"]))
    return out


def x(v):
    return LEFT + min(v, X_MAX) / X_MAX * WIDTH


def svg(rows):
    h = 40 + ROW_H * len(rows) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 20}" height="{h}" '
             'font-family="sans-serif" font-size="11">',
             f'<text x="10" y="16" font-size="13">Latency / alone p50 of the mode: p50 (dark), p99 (light), '
             f'p99.9 (tick); clipped at {X_MAX}</text>']
    for i, (name, p50, p99, p999) in enumerate(rows):
        y = 30 + i * ROW_H
        parts.append(f'<text x="{LEFT - 6}" y="{y + 11}" text-anchor="end">{name}</text>')
        parts.append(f'<rect x="{LEFT}" y="{y + 2}" width="{x(p99) - LEFT:.1f}" height="{ROW_H - 4}" fill="#9ecae1"/>')
        parts.append(f'<rect x="{LEFT}" y="{y + 2}" width="{x(p50) - LEFT:.1f}" height="{ROW_H - 4}" fill="#3182bd"/>')
        parts.append(f'<line x1="{x(p999):.1f}" x2="{x(p999):.1f}" y1="{y + 1}" y2="{y + ROW_H - 1}" stroke="black"/>')
    bottom = 30 + ROW_H * len(rows)
    for v, label in ((1.0, "1"), (1.15, "1.15"), (1.5, "1.5"), (2.0, "2"), (3.0, "3")):
        parts.append(f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="28" y2="{bottom}" stroke="{"red" if v in (1.15, 1.5) else "#bbb"}" '
                     'stroke-dasharray="3,3"/>')
        parts.append(f'<text x="{x(v):.1f}" y="{bottom + 14}" text-anchor="middle">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    rows = [r for path in sys.argv[2:] for r in rows_of(path)]
    if not rows:
        print("plot_interference: nothing to plot (no mode has an alone baseline)", file=sys.stderr)
        return 1
    with open(sys.argv[1], "w") as f:
        f.write(svg(rows))
    print(f"{sys.argv[1]}: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
