"""Held-out site 525: the ranks' bound over the age rate x age cap grid, the other weights
as refine left them (half-life 59 h, size share 0.0366) and as the truth has them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

import unseen_sites as us  # noqa: E402
from sim.availability import recorded_usage  # noqa: E402
from sim.config import SlurmConfig  # noqa: E402
from sim.log_inference import infer_limits  # noqa: E402
from sim.profile import weight_lines  # noqa: E402
from sim.start_order import AGE_RATES, MAX_AGES, Queues, rank_bound  # noqa: E402

site, rng = us.draw(525, grid=False)
trace = us.record(site, rng, 8000)
units = recorded_usage(trace).peak
q = Queues(trace, units, infer_limits(trace, np.isfinite(trace.recorded_start)))
t0 = time.process_time()
for half, size in ((59 / 24, 0.0366), (58 / 24, 2984 / 95313)):
    print(f"half-life {half * 24:.0f} h, size share {size:.4f}: bound per rate (rows) x cap (cols)")
    print("rate      " + " ".join(f"{c:>5g}" for c in MAX_AGES))
    for rate in AGE_RATES:
        row = []
        for cap in MAX_AGES:
            lines = weight_lines(half, rate, size, cap)
            row.append(rank_bound(q.ranks(SlurmConfig.from_text("\n".join(lines) + "\n", "x"))))
        print(f"{rate:<9g} " + " ".join(f"{b:>5d}" for b in row))
print(f"true weights: rate {1363 / 95313 / 2:.4f}/day, cap 2 d")
print(f"{2 * len(AGE_RATES) * len(MAX_AGES)} rankings in {time.process_time() - t0:.1f} CPU-s")
