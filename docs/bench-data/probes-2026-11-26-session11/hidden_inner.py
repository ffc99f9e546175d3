"""Probe (session 11, issue 23; needs the code of commit 35b02d1, where the hidden load lived): does a stationary hidden load (``SiteProfile.hidden``,
queues the log does not list, as a stream of jobs with the log's run times) forecast the
next period better? Validated inside the past only, as session 10's recency probe: the
log's first two thirds are the world; each fit uses its first two thirds (4/9 of the
span), and every variant is judged on the jobs submitted in 4/9-6/9 of the span, 3
jitters (each also draws its own hidden load). The last third is not read except through
the recorded use, as in every replay.

    PYTHONPATH=. .venv/bin/python \
        docs/bench-data/probes-2026-11-26-session11/hidden_inner.py TRACE [RECENT]

Variants: the fit without the hidden-load axis (``HIDDEN = (None,)``, the fit before this
session) and with it, each standard and judged on the fit period's last RECENT (0.5).
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
HIDDEN = P.HIDDEN

t0, t1 = float(trace.submit[0]), float(trace.submit[-1])
a, b = t0 + inner * (t1 - t0), t0 + 2 / 3 * (t1 - t0)
judged = np.isfinite(trace.recorded_start) & (trace.submit >= a) & (trace.submit < b)
rec = (trace.recorded_start - trace.submit)[judged]
print(f"{trace.source}: judged on {judged.sum()} jobs submitted in 4/9-6/9 of the span")
for hidden in (False, True):
    for share in (None, recent):
        P.HIDDEN = HIDDEN if hidden else (None,)
        name = ("hidden" if hidden else "no hidden") + (f", recent {share}" if share else "")
        start = time.process_time()
        prof = P.fit(trace, fraction=inner, recent=share)
        runs = [
            fidelity(P.replay_waits(trace, prof, jitter=P.JITTER, seed=s)[judged], rec)
            for s in range(3)
        ]
        losses = [P.loss(r) for r in runs]
        f = runs[0]
        fit_loss = min(float(s["loss"]) for s in prof.steps)  # type: ignore[arg-type]
        print(
            f"{name:24s} {prof.describe()}\n"
            f"   fit loss {fit_loss:.3f}; judged loss {np.mean(losses):.3f} +- "
            f"{np.std(losses):.3f}; Spearman {np.mean([r.spearman for r in runs]):.3f} KS "
            f"{np.mean([r.ks for r in runs]):.3f} median "
            f"{np.mean([r.sim_median_h for r in runs]):.2f}/{f.rec_median_h:.2f} h mean "
            f"{np.mean([r.sim_mean_h for r in runs]):.2f}/{f.rec_mean_h:.2f} h p90 "
            f"{np.mean([r.sim_p90_h for r in runs]):.2f}/{f.rec_p90_h:.2f} h "
            f"({time.process_time() - start:.0f} CPU-s)",
            flush=True,
        )
