# Predicted latency of every row of the 2026-11-25 H100 curves (their kernel times at open), with the
# probed profile and with the profile calibrated from the 2026-11-21 traces (cal.cpp). Run from the
# repository root after building build-cpu/tools/dlbench; writes what sim_out.txt holds.
import json, subprocess, re, sys
W="."  # run from the repository root
def run(cfg, size, prec, budget, config, prof, jsonf):
    out=subprocess.run([W+'/build-cpu/tools/dlbench', cfg, '--simulate-only', '--copy-profile', prof,
        '--layer-ms-from', jsonf, '--layer-ms-config', config, '--precision', prec, '--size', str(size),
        '--weight-budget', budget], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith(prec+' '):
            m=re.findall(r'([\d.]+) ms', line)
            return float(m[0]), float(m[1]) if len(m)>1 else 0
    return None, None
for name, cfg, size, prec, jsonf, cal in [
    ('yolov4 fp16', '../shared/models/yolov4.cfg', 608, 'fp16', W+'/docs/results/h100-2026-11-25-curve/budget_curve_yolov4_608_fp16.json', 'docs/results/sim-2026-11-25-calib/cal_yolov4.json'),
    ('yolov4-tiny fp16', '../shared/models/yolov4-tiny.cfg', 416, 'fp16', W+'/docs/results/h100-2026-11-25-curve/budget_curve_tiny_416_fp16.json', 'docs/results/sim-2026-11-25-calib/cal_tiny.json')]:
    d=json.load(open(jsonf)); print(name)
    for r in d['results']:
        s=r.get('stream')
        if not s or 'kernel_ms_at_open' not in s: continue
        b=r['config'].split('@')[1].split(':')[0]
        m=r['network']['median_ms']
        p0,_=run(cfg,size,prec,b,r['config'],'docs/results/sim-2026-11-25-calib/probe_h100_2026-11-25.json',jsonf)
        p1,_=run(cfg,size,prec,b,r['config'],cal,jsonf)
        print('  %-6s measured %.3f  recorded pred %.3f  probe %.3f (%+.1f%%)  calibrated %.3f (%+.1f%%)'%(b,m,s['predicted_ms'],p0,100*(p0/m-1),p1,100*(p1/m-1)))
