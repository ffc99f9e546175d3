import sys, numpy as np, time
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from dataclasses import replace
from sim.traces import read_trace
from sim.profile import SiteProfile, split, replay_waits
from sim.fidelity import fidelity
from sim.availability import recorded_usage, Availability
import sim.profile as P

def outages(trace, units, min_gap):
    rec = trace.recorded_start; ok = np.isfinite(rec)
    starts = np.unique(rec[ok])
    use = recorded_usage(trace)
    gi = np.flatnonzero(np.diff(starts) >= min_gap)
    wait = rec - trace.submit
    cand = ok & (wait >= min_gap)
    cs, cst, cu = trace.submit[cand], rec[cand], trace.units[cand]
    out = []
    for g in gi:
        a, b = starts[g], starts[g+1]
        x = b - min_gap
        lvl = use.units[np.searchsorted(use.times, x, side='right') - 1]
        m = (cs <= x) & (cst >= b) & (cu <= units - lvl)
        if m.any():
            out.append((a + 1.0, b))
    return out

def apply(av, wins, total, t_end):
    # av: Availability or None -> step function with zero in windows
    times = list(av.times) if av is not None else []
    units = list(av.units) if av is not None else []
    def at(t):
        i = np.searchsorted(times, t, side='right') - 1
        return total if i < 0 else units[i]
    pts = sorted(set(times) | {a for a, b in wins} | {b for a, b in wins})
    newu = []
    for t in pts:
        inwin = any(a <= t < b for a, b in wins)
        newu.append(0 if inwin else at(t))
    return Availability(tuple(float(t) for t in pts), tuple(int(u) for u in newu))

tr = read_trace(str(ROOT.parent / 'shared/traces/ls6-a100.log'))
prof = SiteProfile.from_json(open(ROOT / 'sim/data/ls6-a100.log.profile.json').read())
print(prof.describe())
fitm, held, cut = split(tr)
rec = tr.recorded_start - tr.submit
for gap in [None, 2*3600, 4*3600, 6*3600]:
    av0 = prof.availability(tr)
    av = av0
    if gap:
        w = outages(tr, prof.units, gap)
        av = apply(av0, w, prof.units, 0)
        nw = len(w); hrs = sum(b-a for a,b in w)/3600
    else: nw, hrs = 0, 0
    orig = SiteProfile.availability
    SiteProfile.availability = lambda self, trace, total_units=None: av
    res = []
    for s in range(3):
        wts = replay_waits(tr, prof, jitter=0.02, seed=s)
        res.append((fidelity(wts[fitm], rec[fitm]), fidelity(wts[held], rec[held])))
    SiteProfile.availability = orig
    for name, k in (("fit", 0), ("held", 1)):
        fs = [r[k] for r in res]
        print(f"gap={gap} windows={nw} ({hrs:.0f} h) {name}: sp={np.mean([f.spearman for f in fs]):.3f} ks={np.mean([f.ks for f in fs]):.3f} med={np.mean([f.sim_median_h for f in fs]):.2f}/{fs[0].rec_median_h:.2f} mean={np.mean([f.sim_mean_h for f in fs]):.2f}/{fs[0].rec_mean_h:.2f} p90={np.mean([f.sim_p90_h for f in fs]):.2f}/{fs[0].rec_p90_h:.2f} loss={np.mean([P.loss(f) for f in fs]):.3f}")
