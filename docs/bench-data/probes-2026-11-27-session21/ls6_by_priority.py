"""LS6 (analysis of the held-out third, seen many times; nothing is chosen on it): the
recorded Priority column's levels (LS6's scale: 1001-5228, a base of 1000 plus a small
fair-share term) and each level's recorded and replayed waits, shipped profile, 3 jitters."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import sim.fit as F  # noqa: E402
from sim.profile import load  # noqa: E402
from sim.traces import read_trace  # noqa: E402

trace = read_trace(str(ROOT.parent / "shared/traces/ls6-a100.log"))
prof = load(trace)
assert prof is not None
fit, held, _ = F.split(trace)
p = trace.recorded_priority
rec = (trace.recorded_start - trace.submit) / 3600
sims = [F.replay_waits(trace, prof, jitter=F.JITTER, seed=s) / 3600 for s in range(3)]
for name, part in (("fit part", fit), ("held-out third", held)):
    print(name)
    for lo, hi in ((0, 1050), (1050, 1100), (1100, 1200), (1200, 1500), (1500, 4900), (4900, 1e9)):
        s = part & (p >= lo) & (p < hi)
        if not s.sum():
            continue
        sim = [np.nanmean(x[s]) for x in sims]
        print(
            f"  priority [{lo:g}, {hi:g}): {s.sum()} jobs, {len(np.unique(trace.user[s]))} users; "
            f"mean wait recorded {rec[s].mean():.2f} h, replayed {np.mean(sim):.2f} h "
            f"({min(sim):.2f}-{max(sim):.2f}); share of the recorded waiting "
            f"{np.nansum(rec[s]) / np.nansum(rec[part]):.2f}"
        )
