"""LS6: a larger age weight, screened on the fit part only (the past). LS6's age weight
was never fitted: its Priority column is recorded at submission, where age is 0, and the
fit keeps the column's best setting (fair share 3.5 d: age 1000 over 7 days). Here the
shipped profile is replayed with the age rate raised, everything else as shipped, and
scored by the fit's loss over its fit part (the recent half of the first two thirds),
3 jittered replays each. The held-out third is not replayed."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import sim.fit as F  # noqa: E402
from sim.profile import load, weights_text  # noqa: E402
from sim.traces import read_trace  # noqa: E402

trace = read_trace(str(ROOT.parent / "shared/traces/ls6-a100.log"))
prof = load(trace)
assert prof is not None
fit, _, _ = F.split(trace, recent=prof.recent)
rec = trace.recorded_start - trace.submit
print(f"shipped: {prof.describe()}; fit part {fit.sum()} jobs")
for max_age in (7.0, 2.0):
    for rate in (0.01 / 7, 0.01, 0.03, 0.1, 0.3):
        p = replace(prof, weights=[3.5, rate, 0.0, max_age])
        total, fig = F.setting_loss(trace, p, fit, rec, 3)
        print(
            f"{weights_text(p.weights)}: fit-part loss {total:.3f}; first replay Spearman "
            f"{fig['spearman']:.3f}, KS {fig['ks']:.3f}, mean {fig['sim_mean_h']:.2f} / "
            f"{fig['rec_mean_h']:.2f} h, p90 {fig['sim_p90_h']:.2f} / {fig['rec_p90_h']:.2f} h",
            flush=True,
        )
