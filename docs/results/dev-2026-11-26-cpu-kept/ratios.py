import json, os, sys, statistics as st
d = sys.argv[1]
rows = {}
for f in sorted(os.listdir(d)):
    if not f.endswith('.json'): continue
    name, r = f[:-5].rsplit('_', 1)
    x = json.load(open(os.path.join(d, f)))['results'][0]
    rows.setdefault(int(r), {})[name] = (x['network']['median_ms'], x['memory']['host_rss_peak'] / 2**20,
                                         x.get('storage', {}).get('read_bytes', 0) / 2**20 if isinstance(x.get('storage'), dict) else 0)
names = sorted({n for v in rows.values() for n in v}, key=lambda n: (n != 'host', n))
ratios = {n: [] for n in names}
for r in sorted(rows):
    v = rows[r]
    if 'host' not in v: continue
    h = v['host'][0]
    print(r, '  '.join('%s %.1f (%.0f MiB) %.3fx' % (n, v[n][0], v[n][1], v[n][0] / h) for n in names if n in v))
    for n in names:
        if n in v: ratios[n].append(v[n][0] / h)
hr = [rows[r]['host'][1] for r in rows if 'host' in rows[r]]
for n in names:
    if ratios[n]:
        rss = [rows[r][n][1] for r in rows if n in rows[r]]
        print('%-14s median ratio %.3f  range %.3f-%.3f  n=%d  rss %.0f MiB = %.1f %% of host' % (n, st.median(ratios[n]), min(ratios[n]), max(ratios[n]), len(ratios[n]), max(rss), 100 * max(rss) / max(hr)))
