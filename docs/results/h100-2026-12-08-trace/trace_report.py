#!/usr/bin/env python3
"""Scratch: one dlbench row's CUPTI trace (cupti_trace.cpp) as a timeline of its last
inferences: per inference the span, the copy engine's busy time and rate, the compute
stream's kernels and gaps, the expansions; per copy (by order) its median bytes, start,
end and rate; per compute kernel (by order) its median duration.
usage: trace_report.py TRACE.tsv [N_LAST] [--json OUT]"""
import json, statistics as st, sys
from collections import defaultdict

def load(path):
    recs = defaultdict(list)
    for line in open(path):
        f = line.split()
        if f[0] == 'K':
            recs[int(f[4])].append(('K', int(f[1]), int(f[2]), int(f[3]), ' '.join(f[6:])))
        elif f[0] == 'M':
            recs[int(f[4])].append(('M', int(f[1]), int(f[2]), int(f[3]), int(f[6]), int(f[7])))
    return recs

def union(iv):
    tot, cur_s, cur_e = 0, None, None
    for s, e in sorted(iv):
        if cur_e is None or s > cur_e:
            if cur_e is not None: tot += cur_e - cur_s
            cur_s, cur_e = s, e
        else: cur_e = max(cur_e, e)
    if cur_e is not None: tot += cur_e - cur_s
    return tot

def main():
    path = sys.argv[1]; n_last = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 40
    recs = load(path)
    # the inferences: graph launches of many kernels, all with the same kernel count as the last
    launches = [(min(r[1] for r in v), c) for c, v in recs.items() if sum(1 for r in v if r[0] == 'K') >= 50]
    launches.sort()
    if not launches: print('no graph launches in', path); return
    count = lambda c: sum(1 for r in recs[c] if r[0] == 'K')
    want = count(launches[-1][1])
    its = [c for _, c in launches if count(c) == want][-n_last:]
    rows, copies, kern = [], defaultdict(list), defaultdict(list)
    for c in its:
        v = recs[c]
        t0 = min(r[1] for r in v); t1 = max(r[2] for r in v)
        ks = [r for r in v if r[0] == 'K']
        streams = defaultdict(int)
        for r in ks: streams[r[3]] += 1
        main_stream = max(streams, key=streams.get)
        comp = sorted([r for r in ks if r[3] == main_stream], key=lambda r: r[1])
        exp = [r for r in ks if 'dequantize' in r[4]]
        h2d = sorted([r for r in v if r[0] == 'M' and r[5] == 1], key=lambda r: r[1])
        comp_busy = union([(r[1], r[2]) for r in comp])
        rows.append(dict(span=(t1 - t0) / 1e6, comp_first=(comp[0][1] - t0) / 1e6, comp_last=(comp[-1][2] - t0) / 1e6,
                         comp_busy=comp_busy / 1e6, comp_kernels=len(comp), exp_busy=union([(r[1], r[2]) for r in exp]) / 1e6,
                         exp_kernels=len(exp), exp_on_main=sum(1 for r in exp if r[3] == main_stream),
                         copy_busy=union([(r[1], r[2]) for r in h2d]) / 1e6, copies=len(h2d),
                         copy_bytes=sum(r[4] for r in h2d), last_copy_end=(max([r[2] for r in h2d], default=t0) - t0) / 1e6))
        for i, r in enumerate(h2d): copies[i].append((r[4], (r[1] - t0) / 1e6, (r[2] - t0) / 1e6))
        for i, r in enumerate(comp): kern[i].append(((r[2] - r[1]) / 1e6, (r[1] - t0) / 1e6, r[4][:60]))
    med = {k: st.median(r[k] for r in rows) for k in rows[0]}
    print(f"# {path}: {len(rows)} inferences of {want} kernels")
    print("# median: " + ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in med.items()))
    if med['copy_busy'] > 0:
        print(f"# copy rate over busy time {med['copy_bytes'] / med['copy_busy'] / 1e6:.1f} GB/s")
    for i in sorted(copies):
        b = st.median(x[0] for x in copies[i]); s = st.median(x[1] for x in copies[i]); e = st.median(x[2] for x in copies[i])
        d = st.median(x[2] - x[1] for x in copies[i])
        print(f"copy {i:3d} {b / 1048576:8.3f} MiB  {s:.4f}-{e:.4f}  {b / d / 1e6 if d > 0 else 0:5.1f} GB/s")
    out = dict(rows=rows, median=med,
               copies=[dict(bytes=st.median(x[0] for x in copies[i]), start=st.median(x[1] for x in copies[i]),
                            end=st.median(x[2] for x in copies[i])) for i in sorted(copies)],
               kernels=[dict(ms=st.median(x[0] for x in kern[i]), start=st.median(x[1] for x in kern[i]), name=kern[i][0][2])
                        for i in sorted(kern)])
    if '--json' in sys.argv: json.dump(out, open(sys.argv[sys.argv.index('--json') + 1], 'w'))

main()
