"""Must-show 1 with the stored profiles (no refit): the held-out third of each log, 3 runtime
jitters (2 %), as bench/sim_twin.py judges it after its fit.

    PYTHONPATH=. .venv/bin/python docs/bench-data/probes-2026-12-01-session32/heldout_stored.py \
        ../shared/traces/ls6-a100.log ../shared/traces/hpc2n-excerpt.swf
"""

from __future__ import annotations

import sys

import numpy as np

from sim.fidelity import Fidelity, fidelity
from sim.fit import replay_waits, split
from sim.profile import load
from sim.traces.read import read_trace


def spread(runs: list[Fidelity], name: str) -> str:
    v = np.array([getattr(f, name) for f in runs])
    return f"{v.mean():.3f}±{v.std(ddof=1):.3f}"


for path in sys.argv[1:]:
    trace = read_trace(path)
    prof = load(trace)
    assert prof is not None, f"{path}: no stored profile"
    _, held, _ = split(trace)
    rec = (trace.recorded_start - trace.submit)[held]
    runs = [fidelity(replay_waits(trace, prof, jitter=0.02, seed=s)[held], rec) for s in range(3)]
    r = runs[0]
    print(
        path.split("/")[-1],
        "spearman", spread(runs, "spearman"), "ks", spread(runs, "ks"),
        "median", spread(runs, "sim_median_h"), f"/{r.rec_median_h:.2f}",
        "mean", spread(runs, "sim_mean_h"), f"/{r.rec_mean_h:.2f}",
        "p90", spread(runs, "sim_p90_h"), f"/{r.rec_p90_h:.2f}",
    )  # fmt: skip
