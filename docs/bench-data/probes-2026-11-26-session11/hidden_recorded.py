"""Probe (session 11, issue 23; needs the code of commit 35b02d1, where the hidden load lived): on a log the simulator recorded while a hidden load of its
own kind held 10 % of the nodes (tests/sim/test_hidden_load.py's ``recorded``), what does
the fit choose, and how do the hidden load and the availability window replay the last
third (3 jitters, each drawing its own hidden load)?

    PYTHONPATH=. .venv/bin/python docs/bench-data/probes-2026-11-26-session11/hidden_recorded.py
"""

from dataclasses import replace

import numpy as np

from sim.fidelity import fidelity
from sim.profile import fit, loss, replay_waits, split
from tests.sim.test_hidden_load import SHARE, recorded

trace = recorded(SHARE)
prof = fit(trace)
print("fit:", prof.describe())
for s in sorted(prof.steps, key=lambda s: s["loss"])[:6]:  # type: ignore[arg-type,return-value]
    print(f"  fit loss {s['loss']:.3f}: {s['setting']}")
_, held, _ = split(trace)
rec = (trace.recorded_start - trace.submit)[held]
print("held-out loss (3 jitters) by hidden load x window, the fit's other settings:")
for hidden in (None, 0.025, 0.05, 0.1):
    for window in (None, 3600.0, 86400.0):
        p = replace(
            prof, hidden=hidden, window_s=window, clamp=None if window is None else prof.clamp
        )
        ls = [loss(fidelity(replay_waits(trace, p, seed=s)[held], rec)) for s in range(3)]
        print(f"  hidden {hidden}, window {window}: {np.mean(ls):.3f}")
