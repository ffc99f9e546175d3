"""Probe (session 11, issue 23; needs the code of commit 35b02d1, where the hidden load lived): a stationary hidden load (M/G/inf occupancy of jobs resampled
from the fit part; "single": one node each) in place of the shipped LS6 profile's 24-h window;
fit-part loss only (the fit's own criterion). Run from the project root:
.venv/bin/python docs/bench-data/probes-2026-11-26-session11/hidden_ls6_fitpart.py ../shared/traces/ls6-a100.log"""

import sys
from dataclasses import replace

import numpy as np

sys.path.insert(0, ".")
from sim.availability import Availability
from sim.engine import Simulator
from sim.fidelity import fidelity
from sim.profile import JITTER, load, loss, simulated_waits, split
from sim.traces.read import read_trace


def hidden(trace, units, share, seed, cut, single=False):
    rng = np.random.default_rng(1000 + seed)
    pool = (trace.submit < cut) & (trace.runtime > 0)
    u = trace.units[pool].astype(np.int64)
    r = trace.runtime[pool]
    if single:
        u = np.ones_like(u)
    t0 = float(np.nanmin(trace.recorded_start))
    t1 = float(trace.submit[-1]) + 2 * 86400
    n = rng.poisson(share * units * (t1 - t0) / float((u * r).mean()))
    pick = rng.integers(0, u.size, n)
    s = np.sort(rng.uniform(t0, t1, n))
    e = s + r[pick]
    k = u[pick]
    t = np.r_[s, e]
    d = np.r_[k, -k]
    o = np.lexsort((d, t))
    t, d = t[o], d[o]
    lvl = np.cumsum(d)
    last = np.r_[t[1:] != t[:-1], True]
    t, lvl = t[last], lvl[last]
    av = np.maximum(units - lvl, 0)
    ch = np.r_[True, av[1:] != av[:-1]]
    return Availability(tuple(map(float, t[ch])), tuple(map(int, av[ch])))


path = sys.argv[1]
tr = read_trace(path)
prof = load(tr)
fit_mask, held, cut = split(tr)
rec = tr.recorded_start - tr.submit


def run(avail_fn, label):
    ls = []
    for s in range(2):
        rng = np.random.default_rng(s)
        scale = np.clip(1 + JITTER * rng.standard_normal(len(tr)), 0.5, 1.5)
        run_tr = replace(tr, runtime=np.round(tr.runtime * scale))
        sim = Simulator(
            run_tr,
            prof.config(),
            total_units=prof.units,
            seed=0,
            limits=prof.qos(),
            availability=avail_fn(s),
        )
        w = simulated_waits(sim, len(tr))
        f = fidelity(w[fit_mask], rec[fit_mask])
        ls.append(loss(f))
    print(
        f"{label:40s} loss {np.mean(ls):.3f}  sp {f.spearman:.3f} ks {f.ks:.3f} med {f.sim_median_h:.2f}/{f.rec_median_h:.2f} mean {f.sim_mean_h:.2f}/{f.rec_mean_h:.2f} p90 {f.sim_p90_h:.2f}/{f.rec_p90_h:.2f}",
        flush=True,
    )


print(prof.describe())
run(lambda s: prof.availability(tr), "shipped")
run(lambda s: None, "no window")
for single in (False, True):
    for share in (0.05, 0.1, 0.15, 0.2, 0.3):
        run(
            lambda s: hidden(tr, prof.units, share, s, cut, single),
            f"hidden {share} single={single}",
        )
