"""Probe (session 10, issue 23): does a fit judged on the most recent part of its own
period forecast the next period better than the standard fit? Validated inside the past
only: the log's first two thirds are the world; the fit uses its first two thirds (4/9 of
the span), and both fits are judged on the jobs submitted in 4/9-6/9 of the span. The last
third is not read except through the recorded use, as in every replay.

    PYTHONPATH=. .venv/bin/python \
        docs/bench-data/probes-2026-11-26-session10/recency.py TRACE [RECENT]

RECENT (0.5): the share of the fit part, at its end, whose jobs the recency fit judges.
"""

import sys
import time
import warnings

import numpy as np

import sim.profile as P
from sim.fidelity import fidelity
from sim.traces import read_trace

warnings.simplefilter("ignore")
trace = read_trace(sys.argv[1])
recent = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
inner = 4 / 9

t0, t1 = float(trace.submit[0]), float(trace.submit[-1])
a, b = t0 + inner * (t1 - t0), t0 + 2 / 3 * (t1 - t0)
judged = np.isfinite(trace.recorded_start) & (trace.submit >= a) & (trace.submit < b)
rec = (trace.recorded_start - trace.submit)[judged]
print(f"{trace.source}: judged on {judged.sum()} jobs submitted in 4/9-6/9 of the span")
for name, share in (("standard", None), (f"recent {recent}", recent)):
    start = time.process_time()
    prof = P.fit(trace, fraction=inner, recent=share)
    runs = [
        fidelity(P.replay_waits(trace, prof, jitter=P.JITTER, seed=s)[judged], rec)
        for s in range(3)
    ]
    losses = [P.loss(r) for r in runs]
    f = runs[0]
    print(
        f"{name:12s} {prof.describe()}\n"
        f"   loss {np.mean(losses):.3f} +- {np.std(losses):.3f}; Spearman "
        f"{np.mean([r.spearman for r in runs]):.3f} KS {np.mean([r.ks for r in runs]):.3f} "
        f"median {np.mean([r.sim_median_h for r in runs]):.2f}/{f.rec_median_h:.2f} h "
        f"mean {np.mean([r.sim_mean_h for r in runs]):.2f}/{f.rec_mean_h:.2f} h "
        f"p90 {np.mean([r.sim_p90_h for r in runs]):.2f}/{f.rec_p90_h:.2f} h "
        f"({time.process_time() - start:.0f} CPU-s)",
        flush=True,
    )
