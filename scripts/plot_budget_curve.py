#!/usr/bin/python3
"""Latency-vs-weight-budget plot from dlbench JSON (stream mode, several budgets).

usage: plot_budget_curve.py OUT.png CURVE.json [CURVE.json ...]
Each JSON is one `dlbench --mode preload,stream --weight-budget ... [--weight-pool ...]`
or `dlbench --budget-curve N` run; the plot shows measured median latency per precision
and pool layout (ring: units searched at open; ring+chunks: equal chunks; slots;
"~none", "~largest-late": other residency strategies) against device weight memory,
the planner's prediction at open and the lower bound (no plan within the budget is
predicted faster) for the ring, with the preload latency as a line. A
`dlbench --simulate-only` JSON ("rows") plots the prediction and the bound alone (no
GPU), preload as a line. The title names the model(s) and the GPU(s) or copy profile.
Exit 1 with a message when there is nothing to plot (e.g. CPU-only dlbench JSON).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    out = sys.argv[1]
    # One series per (precision, pool layout); the layout comes from the config name
    # ("stream@25%:ring/fp16/b1"); several files may add budgets to the same series.
    series, preload = {}, {}
    autos = []  # (precision, MiB, row) of the budget auto picked
    gpus, models = set(), set()
    for path in sys.argv[2:]:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            print(f"plot_budget_curve.py: {path}: cannot read dlbench JSON ({e})", file=sys.stderr)
            return 1
        if isinstance(data, dict) and isinstance(data.get("rows"), list):  # dlbench --simulate-only
            gpus.add(f"simulated, copy profile {data.get('copy_profile', '?')}")
            models.add(f"{os.path.splitext(os.path.basename(str(data.get('cfg', '?'))))[0]} @{data.get('size', '?')}")
            for row in data["rows"]:
                prec = row["precision"]
                preload.setdefault(prec, row["preload_ms"])
                key = (prec, "simulated " + row["residency"])
                x = row.get("device_weight_bytes", row["budget_bytes"]) / 2**20
                series.setdefault(key, {})[x] = {"predicted_only": True, "row": row}
            continue
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            print(f"plot_budget_curve.py: {path}: not dlbench JSON (no 'results' list)", file=sys.stderr)
            return 1
        gpus.add(data.get("gpu") or "no CUDA device")
        models.add(f"{os.path.splitext(os.path.basename(str(data.get('cfg', '?'))))[0]} @{data.get('size', '?')}")
        for r in data["results"]:
            prec = r["precision"]
            if r["mode"] == "preload":
                preload.setdefault(prec, r["network"]["median_ms"])
                continue
            if r["mode"] != "stream":
                continue
            head = r["config"].split("/")[1]
            pool = head.split(":")[1] if ":" in head else "auto"
            x = r["stream"].get("device_weight_bytes") or r["memory"]["weights"]
            if head.startswith("stream@auto"):  # the budget auto picked: one marker, not a curve point
                autos.append((prec, x / 2**20, r))
                continue
            series.setdefault((prec, pool), {})[x / 2**20] = r
    if not series:
        modes = "preload only" if preload else "no preload or stream results"
        print(f"plot_budget_curve.py: nothing to plot: {', '.join(sys.argv[2:])} hold {modes} "
              "(a curve needs `dlbench --device cuda --mode preload,stream --weight-budget A,B,...` on a GPU)",
              file=sys.stderr)
        return 1
    fig, ax = plt.subplots(figsize=(9, 5.5))
    colors = {}
    for (prec, pool), pts in sorted(series.items()):
        xs = sorted(pts)
        if pts[xs[0]].get("predicted_only"):  # simulate-only rows: prediction and bound
            pred = [(x, pts[x]["row"]["predicted_ms"]) for x in xs if pts[x]["row"]["predicted_ms"] is not None]
            bound = [(x, pts[x]["row"]["lower_bound_ms"]) for x in xs if pts[x]["row"]["lower_bound_ms"] is not None]
            if pred:
                line, = ax.plot([p[0] for p in pred], [p[1] for p in pred], "o-", color=colors.get(prec),
                                label=f"{prec} {pool}: predicted")
                colors.setdefault(prec, line.get_color())
            if bound:
                ax.plot([b[0] for b in bound], [b[1] for b in bound], "v--", color=colors.get(prec), alpha=0.6,
                        label=f"{prec}: lower bound")
            continue
        ys = [pts[x]["network"]["median_ms"] for x in xs]
        style = {"slots": "s--", "ring+chunks": "^-."}.get(pool, "o-")
        if "~none" in pool:
            style = "s--"
        elif "~largest-late" in pool:
            style = "^-."
        line, = ax.plot(xs, ys, style, color=colors.get(prec), label=f"{prec} {pool} (measured median)")
        colors.setdefault(prec, line.get_color())
        sim = [(x, pts[x]["stream"]["simulated_ms"]) for x in xs if "simulated_ms" in pts[x]["stream"]]
        if sim and pool in ("ring", "auto"):
            ax.plot([s[0] for s in sim], [s[1] for s in sim], "x:", color=colors[prec], alpha=0.6,
                    label=f"{prec} {pool} simulator (profiled kernel times)")
        if pool in ("ring", "auto"):
            pred = [(x, pts[x]["stream"]["predicted_ms"]) for x in xs if pts[x]["stream"].get("predicted_ms", 0) > 0]
            bound = [(x, pts[x]["stream"]["lower_bound_ms"]) for x in xs
                     if pts[x]["stream"].get("lower_bound_ms", 0) > 0]
            if pred:
                ax.plot([p[0] for p in pred], [p[1] for p in pred], "+-", color=colors[prec], alpha=0.7,
                        label=f"{prec} {pool} predicted at open")
            if bound:
                ax.plot([b[0] for b in bound], [b[1] for b in bound], "v--", color=colors[prec], alpha=0.5,
                        label=f"{prec} lower bound")
    for prec, x, r in autos:
        st = r["stream"]
        ax.plot([x], [r["network"]["median_ms"]], "*", markersize=14, color=colors.get(prec),
                label=f"{prec} auto: {st.get('auto_budget_pct', 0):.1f} % of the weights, "
                      f"{100 * st.get('measured_slowdown', 0):+.1f} % measured")
    for prec, p in preload.items():
        c = colors.get(prec)
        ax.axhline(p, color=c, linestyle=":", alpha=0.8, label=f"{prec} preload {p:.2f} ms")
    ax.set_xlabel("device weight memory (MiB)")
    ax.set_ylabel("latency per inference (ms)")
    # The title names what the data says: the model(s) and the GPU(s) it was measured on.
    gpu_names = sorted(g.split(",")[0] for g in gpus)
    ax.set_title(f"{', '.join(sorted(models))}, batch 1, {', '.join(gpu_names)}: latency vs weight budget")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
