"""Probe (session 11, analysis only, nothing chosen by it): why March's large LS6 jobs wait so
long in the profile shipped since session 11. The same profile with its availability window
widened (1 h as shipped, 6 h, 24 h), 3 jitters, mean wait in hours by job size for the jobs
submitted in March 2023 and in Nov-Feb, and the fit part's loss (the fit's own criterion).

    PYTHONPATH=. .venv/bin/python docs/bench-data/probes-2026-11-26-session11/march_windows.py
"""

import warnings
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np

from sim.fidelity import fidelity
from sim.profile import load, loss, replay_waits, split
from sim.traces.read import read_trace

warnings.simplefilter("ignore")
tr = read_trace("../shared/traces/ls6-a100.log")
prof = load(tr)
assert prof is not None
fit_mask, _, _ = split(tr, recent=prof.recent)
rec = (tr.recorded_start - tr.submit) / 3600


def t(s: str) -> float:
    return datetime.fromisoformat(s).replace(tzinfo=UTC).timestamp() - tr.start_epoch


periods = {"Nov-Feb": ("2022-11-01", "2023-03-01"), "March": ("2023-03-01", "2023-04-01")}
for window in (3600.0, 6 * 3600.0, 86400.0):
    p = replace(prof, window_s=window)
    runs = [replay_waits(tr, p, jitter=0.02, seed=s) for s in range(3)]
    w = np.nanmean(runs, axis=0) / 3600
    fit_loss = np.mean([loss(fidelity(r[fit_mask], rec[fit_mask] * 3600)) for r in runs])
    line = f"window {window / 3600:4g} h: fit-part loss {fit_loss:.3f}"
    for name, (a, b) in periods.items():
        m = (tr.submit >= t(a)) & (tr.submit < t(b))
        for lo, hi in ((1, 1), (8, 64)):
            k = m & (tr.units >= lo) & (tr.units <= hi)
            line += f" | {name} {lo}-{hi}: {np.nanmean(w[k]):5.2f} ({np.nanmean(rec[k]):.2f})"
    print(line, flush=True)
