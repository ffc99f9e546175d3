"""LS6: the fit's age axis judged inside the past (see ls6_age_declared.txt): fitted on the
first 4/9 of the span (recent half, as shipped), with and without the axis, each judged on
the jobs submitted in 4/9..6/9 over 3 jittered replays."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import sim.fit as F  # noqa: E402
from sim.fidelity import fidelity  # noqa: E402
from sim.traces import read_trace  # noqa: E402

trace = read_trace(str(ROOT.parent / "shared/traces/ls6-a100.log"))
inner = F.FIT_FRACTION * F.FIT_FRACTION
t0, t1 = float(trace.submit[0]), float(trace.submit[-1])
a, b = t0 + inner * (t1 - t0), t0 + F.FIT_FRACTION * (t1 - t0)
judged = np.isfinite(trace.recorded_start) & (trace.submit >= a) & (trace.submit < b)
rec = (trace.recorded_start - trace.submit)[judged]
print(f"inner fit part until t={a / 86400:.1f} d; judged {judged.sum()} jobs", flush=True)
losses = {}
for name, rates in (("without the age axis", ()), ("with the age axis", F.AGE_RATES)):
    began = time.time()
    F.AGE_RATES = rates
    prof = F.fit(trace, fraction=inner, recent=F.RECENT_SHARE, workers=2)
    runs = []
    for s in range(F.INNER_JITTERS):
        f = fidelity(F.replay_waits(trace, prof, jitter=F.JITTER, seed=s)[judged], rec)
        runs.append(F.loss(f))
        print(f"  jitter {s}: loss {runs[-1]:.3f}, Spearman {f.spearman:.3f}, KS {f.ks:.3f}, "
              f"mean {f.sim_mean_h:.2f} / {f.rec_mean_h:.2f} h, p90 {f.sim_p90_h:.2f} / "
              f"{f.rec_p90_h:.2f} h", flush=True)
    losses[name] = runs
    print(f"{name}: {prof.describe()}; judged loss {np.mean(runs):.3f} ± {np.std(runs):.3f} "
          f"({time.time() - began:.0f} s)", flush=True)
w, x = (np.asarray(v) for v in losses.values())
spread = max(w.std(), x.std())
print("age axis preferred inside the past:", bool(x.mean() < w.mean() - spread))
