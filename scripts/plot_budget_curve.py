#!/usr/bin/python3
"""Latency-vs-weight-budget plot from dlbench JSON (stream mode, several budgets).

usage: plot_budget_curve.py OUT.png CURVE.json [CURVE.json ...]
Each JSON is one `dlbench --mode preload,stream --weight-budget ...` run; the plot
shows measured median latency (and the simulator's prediction when present) against
device weight memory, with the preload latency and the copy floor for reference.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    out = sys.argv[1]
    fig, ax = plt.subplots(figsize=(8, 5))
    for path in sys.argv[2:]:
        data = json.load(open(path))
        rows = [r for r in data["results"] if r["mode"] == "stream"]
        pre = [r for r in data["results"] if r["mode"] == "preload"]
        if not rows:
            continue
        prec = rows[0]["precision"]
        rows.sort(key=lambda r: r["memory"]["weights"])
        x = [r["memory"]["weights"] / 2**20 for r in rows]
        y = [r["network"]["median_ms"] for r in rows]
        line, = ax.plot(x, y, "o-", label=f"{prec} stream (measured median)")
        sim = [(xx, r["stream"]["simulated_ms"]) for xx, r in zip(x, rows) if "simulated_ms" in r["stream"]]
        if sim:
            ax.plot([s[0] for s in sim], [s[1] for s in sim], "x--", color=line.get_color(), alpha=0.6,
                    label=f"{prec} simulator prediction")
        if pre:
            p = pre[0]["network"]["median_ms"]
            ax.axhline(p, color=line.get_color(), linestyle=":", alpha=0.8, label=f"{prec} preload {p:.2f} ms")
        floor = max([r["stream"]["copy_floor_ms"] for r in rows])
        ax.axhline(floor, color=line.get_color(), linestyle="-.", alpha=0.4, label=f"{prec} copy floor {floor:.2f} ms")
    ax.set_xlabel("device weight memory (MiB)")
    ax.set_ylabel("latency per inference (ms)")
    ax.set_title("yolov4 @608, batch 1, H100: latency vs weight budget")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
