import numpy as np, sys
data = {}
for f in ("/tmp/s20_ranks_0_on.npz", "/tmp/s20_ranks_48_off.npz"):
    z = np.load(f)
    for k in z.files:
        data[k] = z[k]

def wall(ranks, bound, lo_pct=90, rel=0.5, wfrac=5):
    counts = np.bincount(ranks, minlength=2 * bound + 8).astype(float)
    lo = max(1, int(np.percentile(ranks, lo_pct)))
    best, at = -np.inf, None
    for d in range(lo, bound + 2):
        w = max(3, d // wfrac)
        below = counts[max(0, d - w):d].mean()
        above = counts[d:d + w].mean()
        if above <= rel * below and below - above > best:
            best, at = below - above, d
    return at if at is not None else bound + 1

for params in [dict(lo_pct=80, rel=10), dict(lo_pct=90, rel=10), dict(lo_pct=90, rel=0.5), dict(lo_pct=90, rel=0.35), dict(lo_pct=85, rel=0.35), dict(lo_pct=90, rel=0.5, wfrac=4), dict(lo_pct=90, rel=0.5, wfrac=8)]:
    e98, ew, out = [], [], []
    for k, v in data.items():
        true, d98, r = int(v[0]), int(v[1]), v[2:].astype(int)
        if true != 50: continue
        wd = wall(r, d98 - 1, **params)
        e98.append(abs(d98 - 50)); ew.append(abs(wd - 50)); out.append(f"{k}:{d98}/{wd}")
    print(params, "p98 err sum", sum(e98), "max", max(e98), "| wall err sum", sum(ew), "max", max(ew))
    print("   ", " ".join(out))
print("--- combined: wall where it is below TOL x the p98 depth")
for tol in (0.85, 0.9, 0.95):
  for params in [dict(lo_pct=90, rel=0.35), dict(lo_pct=90, rel=0.5), dict(lo_pct=90, rel=0.5, wfrac=4)]:
    e98, ew, out = [], [], []
    for k, v in data.items():
        true, d98, r = int(v[0]), int(v[1]), v[2:].astype(int)
        if true != 50: continue
        wd = wall(r, d98 - 1, **params)
        d = wd if wd < tol * d98 else d98
        e98.append(abs(d98 - 50)); ew.append(abs(d - 50)); out.append(f"{k}:{d98}/{d}")
    print(tol, params, "p98 err sum", sum(e98), "max", max(e98), "| combined err sum", sum(ew), "max", max(ew), "within 3:", sum(e<=3 for e in e98), sum(e<=3 for e in ew), "of", len(ew))
