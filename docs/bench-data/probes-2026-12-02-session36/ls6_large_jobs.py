"""Exploratory (session 36): LS6's held-out jobs under the stored profile: its 64-node jobs,
and mean waits by time limit."""
import numpy as np
from sim.fit import replay_waits, split
from sim.profile import load
from sim.traces.read import read_trace
tr = read_trace("../shared/traces/ls6-a100.log")
p = load(tr)
_, held, _ = split(tr)
rec = tr.recorded_start - tr.submit
sim = replay_waits(tr, p)
np.save("/tmp/p36/ls6_sim.npy", sim)
h = held
print("held", h.sum(), "sim mean", np.nanmean(sim[h])/3600, "rec mean", rec[h].mean()/3600, "nan", np.isnan(sim[h]).sum())
big = h & (tr.units > 16)
for i in np.flatnonzero(big):
    print("big", i, tr.units[i], "user", tr.user[i], "rec", rec[i]/3600, "sim", sim[i]/3600, "limit h", tr.limit[i]/3600)
lim = tr.limit / 3600
for lo, hi in ((0, 2), (2, 12), (12, 47), (47, 1e9)):
    m = h & (lim > lo) & (lim <= hi)
    print(f"limit ({lo},{hi}] h: n {m.sum()} rec {rec[m].mean()/3600:.2f} sim {np.nanmean(sim[m])/3600:.2f} share of rec total {rec[m].sum()/rec[h].sum():.2f}")
