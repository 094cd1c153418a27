#!/usr/bin/env bash
# Thirty-seventh session, run in the thirty-eighth, build h22: dlrun --model with the four
# models on the six images (dlgen weights with objectness bias -2.5: at 0, yolov4 @608 keeps
# some 22k candidate boxes and Darknet's NMS takes minutes an image), every weight resident
# (--runtime-budget all) and in 52 MiB (no --slot-size: the runtime opens yolov4 and yolov3
# with 1 MiB slots), fp16; the detections compared. One tarball.
set -u
O=/tmp/ob; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/dlrun.tgz" -C /tmp ob; }; trap fin EXIT
v=${V:-h22}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; M=$S/models; SW="$S/weights"; G=/tmp/gen; mkdir -p $G
for c in yolov4 yolov3 yolov4-tiny; do $X/dlgen --objectness-bias -2.5 $M/$c.cfg $G/$c.weights > /dev/null || echo "dlgen $c failed"; done
I=$(ls $S/images/*.ppm | head -6)
for b in all 52MiB; do
  DLR_LOG_LEVEL=info timeout 80 $X/dlrun --device cuda --precision fp16 --json --model $M/yolov4.cfg:$G/yolov4.weights@608 \
    --model $M/yolov3.cfg:$G/yolov3.weights@608 --model $M/yolov4-tiny.cfg:$G/yolov4-tiny.weights@416 \
    --model $SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416 --runtime-budget $b $I > $O/dlrun_$b.json 2> $O/dlrun_$b.log
  echo "dlrun $b rc=$? at ${SECONDS}s"; grep -E 'opening it again|device memory|error' $O/dlrun_$b.log | cut -c1-200 | head -6; fin
done
python3 - "$O/dlrun_all.json" "$O/dlrun_52MiB.json" <<'PY' | tee $O/compare.txt
import json, sys
def load(p):
    out = {}
    for line in open(p):
        line = line.strip()
        if not line.startswith('{'): continue
        f = json.loads(line)
        for m in f['models']: out[(f['image'], m['model'])] = m['detections']
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
def iou(p, q):
    p, q = p['box'], q['box']
    w = min(p['left'] + p['width'], q['left'] + q['width']) - max(p['left'], q['left'])
    h = min(p['top'] + p['height'], q['top'] + q['height']) - max(p['top'], q['top'])
    i = max(w, 0) * max(h, 0)
    return i / (p['width'] * p['height'] + q['width'] * q['height'] - i + 1e-12)
same = lost = 0; worst_iou = 1.0; worst_dp = 0.0
for k, da in a.items():
    db = list(b.get(k) or [])
    for d in da:
        best = max(db, key=lambda e: iou(d, e) if e['id'] == d['id'] else -1, default=None)
        if best is None or best['id'] != d['id'] or iou(d, best) < 0.9 or abs(best['prob'] - d['prob']) > 0.03:
            lost += 1; print("lost:", k, d['class'], round(d['prob'], 3)); continue
        same += 1; worst_iou = min(worst_iou, iou(d, best)); worst_dp = max(worst_dp, abs(best['prob'] - d['prob']))
        db.remove(best)
    for e in db: print("gained:", k, e['class'], round(e['prob'], 3))
n = sum(len(v) for v in a.values())
print(f"{len(a)} (image, model) pairs; {n} detections with every weight resident, {same} matched in 52 MiB "
      f"(IoU >= 0.9, |dp| <= 0.03; worst IoU {worst_iou:.4f}, worst |dp| {worst_dp:.4f}), {lost} lost; "
      f"identical lists {sum(a[k] == b.get(k) for k in a)} of {len(a)}")
PY
