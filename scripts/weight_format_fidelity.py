#!/usr/bin/env python3
"""Detections with int8 weights against the same run with fp weights (issue 33).

Runs `dlrun CFG WEIGHTS IMAGE --json` once with the reference flags (--ref, default
`--weight-format fp`) and once with the test flags (--test, default `--weight-format
int8`), both after --flags, for each image, then matches every reference detection above
the threshold to a test detection of the same class with IoU >= --iou and |delta p| <=
--dp. (--ref "--precision fp32" --test "--precision fp16" sets the same measure on fp16.) Prints a table (matched, lost, gained per
image) and writes every detection and match to --json. Standard library only.

  scripts/weight_format_fidelity.py --dlrun build/tools/dlrun \
      --cfg ../shared/weights/yolo-fastest-1.1.cfg --weights ../shared/weights/yolo-fastest-1.1.weights \
      --flags "--device cuda --precision fp16" --json out.json ../shared/images/*.jpg
"""
import argparse
import json
import shlex
import subprocess
import sys


def detections(args, image, extra, dlrun):
    cmd = [dlrun, args.cfg, args.weights, image, "--json", "--thresh", str(args.thresh)] + \
        shlex.split(args.flags) + shlex.split(extra)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"weight_format_fidelity: {' '.join(cmd)} exited {out.returncode}: {out.stderr.strip()}")
    frames = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if len(frames) != 1:
        sys.exit(f"weight_format_fidelity: {image}: expected one JSON frame from dlrun, got {len(frames)}")
    return [{"class": d["class"], "prob": d["prob"], "box": d["box"]} for d in frames[0]["detections"]]


def iou(a, b):
    ax0, ay0, ax1, ay1 = a["left"], a["top"], a["left"] + a["width"], a["top"] + a["height"]
    bx0, by0, bx1, by1 = b["left"], b["top"], b["left"] + b["width"], b["top"] + b["height"]
    w = max(0.0, min(ax1, bx1) - max(ax0, bx0))
    h = max(0.0, min(ay1, by1) - max(ay0, by0))
    inter = w * h
    union = a["width"] * a["height"] + b["width"] * b["height"] - inter
    return inter / union if union > 0 else 0.0


def match(ref, got, args):
    """Greedy by reference probability: each reference box takes the best unused box of its class."""
    used = set()
    rows = []
    for r in sorted(ref, key=lambda d: -d["prob"]):
        best, best_iou = None, -1.0
        for k, g in enumerate(got):
            if k in used or g["class"] != r["class"]:
                continue
            v = iou(r["box"], g["box"])
            if v > best_iou:
                best, best_iou = k, v
        dp = abs(got[best]["prob"] - r["prob"]) if best is not None else None
        ok = best is not None and best_iou >= args.iou and dp <= args.dp
        if ok:
            used.add(best)
        rows.append({"class": r["class"], "prob": r["prob"], "matched": ok,
                     "best_iou": round(best_iou, 4) if best is not None else None,
                     "best_prob": got[best]["prob"] if best is not None else None})
    gained = [g for k, g in enumerate(got) if k not in used]
    return rows, gained


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dlrun", required=True)
    p.add_argument("--test-dlrun", help="another dlrun for the test run (e.g. another build); default --dlrun")
    p.add_argument("--cfg", required=True)
    p.add_argument("--weights", required=True)
    p.add_argument("--flags", default="", help="more dlrun flags for both runs, e.g. '--device cuda --precision fp16'")
    p.add_argument("--ref", default="--weight-format fp", help="the reference run's own flags")
    p.add_argument("--test", default="--weight-format int8", help="the compared run's own flags")
    p.add_argument("--thresh", type=float, default=0.25)
    p.add_argument("--iou", type=float, default=0.9)
    p.add_argument("--dp", type=float, default=0.03)
    p.add_argument("--json", help="write every detection and match here")
    p.add_argument("images", nargs="+")
    args = p.parse_args()
    report = {"flags": args.flags, "ref": args.ref, "test": args.test, "iou": args.iou, "dp": args.dp, "thresh": args.thresh, "images": []}
    totals = [0, 0, 0, 0]
    print(f"reference: {args.flags} {args.ref}; test: {args.flags} {args.test}")
    print(f"{'image':<16} {'ref':>8} {'matched':>8} {'lost':>5} {'gained':>6}  lost (class p: best IoU, p)")
    for image in args.images:
        ref = detections(args, image, args.ref, args.dlrun)
        got = detections(args, image, args.test, args.test_dlrun or args.dlrun)
        rows, gained = match(ref, got, args)
        lost = [r for r in rows if not r["matched"]]
        n = [len(ref), len(rows) - len(lost), len(lost), len(gained)]
        totals = [a + b for a, b in zip(totals, n)]
        name = image.rsplit("/", 1)[-1]
        why = "; ".join(f"{r['class']} {r['prob']:.3f}: {r['best_iou']}, "
                        f"{r['best_prob'] if r['best_prob'] is None else round(r['best_prob'], 3)}" for r in lost)
        print(f"{name:<16} {n[0]:>8} {n[1]:>8} {n[2]:>5} {n[3]:>6}  {why}")
        report["images"].append({"image": image, "ref": ref, "test": got, "matches": rows, "gained": gained})
    print(f"{'all':<16} {totals[0]:>8} {totals[1]:>8} {totals[2]:>5} {totals[3]:>6}")
    report["totals"] = dict(zip(["ref", "matched", "lost", "gained"], totals))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
