"""LS6's shipped profile with the window narrowed beside idle units (seen; exploratory, no
refit): the held-out third (sim.fit.split), 3 runtime jitters, against the profile as shipped.
Usage: ls6_profile_narrowed.py LOG"""
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from sim.fidelity import fidelity  # noqa: E402
from sim.fit import JITTER, replay_waits, split  # noqa: E402
from sim.profile import load  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

trace = read_trace(sys.argv[1])
prof = load(trace)
print(f"shipped: {prof.describe()}")
_, held, _ = split(trace)
rec = (trace.recorded_start - trace.submit)[held]
for name, p in (("shipped", prof), ("narrowed 1 h", replace(prof, clamp=None, narrow_s=3600.0))):
    runs = [fidelity(replay_waits(trace, p, jitter=JITTER, seed=s)[held], rec) for s in range(3)]
    f = {k: np.mean([getattr(r, k) for r in runs]) for k in ("spearman", "ks", "sim_median_h", "sim_mean_h", "sim_p90_h")}
    print(f"{name}: Spearman {f['spearman']:.3f}, KS {f['ks']:.3f}, median {f['sim_median_h']:.2f} / "
          f"{runs[0].rec_median_h:.2f} h, mean {f['sim_mean_h']:.2f} / {runs[0].rec_mean_h:.2f} h, "
          f"p90 {f['sim_p90_h']:.2f} / {runs[0].rec_p90_h:.2f} h", flush=True)
