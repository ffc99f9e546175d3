import sys, numpy as np
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from sim.traces import read_trace
from sim.profile import SiteProfile, split, replay_waits
from sim.fidelity import spearman
tr = read_trace(str(ROOT.parent / 'shared/traces/ls6-a100.log'))
prof = SiteProfile.from_json(open(ROOT / 'sim/data/ls6-a100.log.profile.json').read())
fitm, held, cut = split(tr)
rec = (tr.recorded_start - tr.submit)/3600
sim = replay_waits(tr, prof, jitter=0.0)/3600

h = held & np.isfinite(sim)
us = tr.user[h]; r = rec[h]; s = sim[h]
print("overall", spearman(s, r))
# between users: per-user means
uu = np.unique(us)
rm = np.array([r[us==x].mean() for x in uu]); sm = np.array([s[us==x].mean() for x in uu]); n = np.array([(us==x).sum() for x in uu])
big = n >= 30
print("users", len(uu), "with>=30 jobs", big.sum(), "spearman of user means", spearman(sm[big], rm[big]))
# within user: replace waits with deviations from user mean rank
for x in uu[np.argsort(-n)][:15]:
    m = us==x
    print(f"user {x}: n={m.sum()} rec mean {r[m].mean():.2f} sim mean {s[m].mean():.2f} within-user sp {spearman(s[m], r[m]):.2f} units {np.median(tr.units[h][m])} limit {np.median(tr.limit[h][m])/3600:.0f}")
# what if each job's sim wait were replaced by user's recorded mean (oracle user effect)
ur = dict(zip(uu, rm))
print("oracle user-mean predictor sp", spearman(np.array([ur[x] for x in us]), r))
# by limit bucket
for lo, hi in [(0,2),(2,12),(12,30),(30,49)]:
    m = (tr.limit[h]/3600 > lo) & (tr.limit[h]/3600 <= hi)
    print(f"limit ({lo},{hi}] n={m.sum()} rec mean {r[m].mean():.2f} sim mean {s[m].mean():.2f} sp {spearman(s[m], r[m]):.2f}")
