#!/usr/bin/env python3
"""spawn.py OUT ROUNDS NAME=ARGS... : runs each named command once per round, in turn
(round 0 fills the caches and is not counted), each its own process, timing exec to exit
with the same clock as the child's marks (CLOCK_MONOTONIC). A child started with
DLR_EXPERIMENT_MARKS=1 prints 'mark WHAT MS' lines on stderr; they become the phases
spawn -> main -> ... -> exit -> reaped. Writes OUT/runs.jsonl and prints medians."""
import json, os, shlex, statistics, subprocess, sys, time

out, rounds, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = [(s.split('=', 1)[0], shlex.split(s.split('=', 1)[1])) for s in specs]
runs = []
for r in range(rounds + 1):
    for name, argv in rows:
        t0 = time.clock_gettime(time.CLOCK_MONOTONIC) * 1e3
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        t1 = time.clock_gettime(time.CLOCK_MONOTONIC) * 1e3
        marks = [(l.split()[1], float(l.split()[2])) for l in p.stderr.decode(errors='replace').splitlines()
                 if l.startswith('mark ') and len(l.split()) == 3]
        if p.returncode != 0:
            sys.stderr.write(f"{name} rc {p.returncode}: {p.stderr.decode(errors='replace')[-400:]}\n")
        runs.append({'round': r, 'name': name, 'rc': p.returncode, 'spawn': t0, 'reaped': t1, 'marks': marks})
with open(os.path.join(out, 'runs.jsonl'), 'a') as f:
    for x in runs:
        f.write(json.dumps(x) + '\n')
for name, _ in rows:
    xs = [x for x in runs if x['name'] == name and x['round'] > 0 and x['rc'] == 0]
    if not xs:
        print(f"{name:18s} no successful run"); continue
    total = [x['reaped'] - x['spawn'] for x in xs]
    line = f"{name:18s} exec to exit median {statistics.median(total):6.0f} ms {[round(t) for t in total]}"
    if xs[0]['marks']:
        points = ['spawn'] + [m for m, _ in xs[0]['marks']] + ['reaped']
        seg = {}
        for x in xs:
            t = [x['spawn']] + [v for _, v in x['marks']] + [x['reaped']]
            for i in range(1, len(t)):
                seg.setdefault(points[i - 1] + '>' + points[i], []).append(t[i] - t[i - 1])
        line += '; ' + ', '.join(f"{k} {statistics.median(v):.0f}" for k, v in seg.items())
    print(line)
