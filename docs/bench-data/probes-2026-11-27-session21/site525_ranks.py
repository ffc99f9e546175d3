"""Held-out site 525: its recorded starts' ranks under the inferred (refined) weights and
under the true ones, near the true depth (50) and the inferred one (66)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

import unseen_sites as us  # noqa: E402
from sim.availability import recorded_usage  # noqa: E402
from sim.config import SlurmConfig  # noqa: E402
from sim.log_inference import infer_limits  # noqa: E402
from sim.start_order import Queues, infer_order, rank_bound, rank_wall  # noqa: E402

site, rng = us.draw(525, grid=False)
trace = us.record(site, rng, 8000)
units = recorded_usage(trace).peak
limits = infer_limits(trace, np.isfinite(trace.recorded_start))
order = infer_order(trace, units, limits)
print(order.describe() if order else None)
q = Queues(trace, units, limits)
BASE = "AccountingStorageType=accounting_storage/slurmdbd\nPriorityType=priority/multifactor\n"
for name, lines in {
    "true": site.lines[2:],
    "found": [x for x in order.lines() if x.startswith("Priority") and "Type" not in x],
}.items():
    cfg = SlurmConfig.from_text(BASE + "\n".join(lines) + "\n", name)
    r = q.ranks(cfg)
    b = rank_bound(r)
    counts = np.bincount(r, minlength=90)
    print(f"{name}: {' '.join(lines)}")
    print(f"  p90 {np.percentile(r, 90):.0f}, p98 bound {b}, wall {rank_wall(r, b)}")
    print("  counts per rank 30-79:", " ".join(str(int(c)) for c in counts[30:80]))
