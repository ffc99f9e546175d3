"""RICC's recorded start order under age + job size favouring small jobs (+ fair share):
the ranks' 98th percentile, median and share at the top."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

from sim.config import SlurmConfig  # noqa: E402
from sim.start_order import Queues, rank_bound  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

trace = read_trace(sys.argv[1] if len(sys.argv) > 1 else "/work/ricc/RICC-2010-2.swf.gz")
q = Queues(trace, int(trace.total_units or trace.units.max()), None)
base = ["AccountingStorageType=accounting_storage/slurmdbd", "PriorityType=priority/multifactor"]
rows = []
for fs in (0, 30000, 100000):
    for age in (1000, 10000, 30000, 100000):
        for size in (10000, 30000, 100000):
            for small in ("YES", "NO"):
                lines = base + [f"PriorityWeightFairshare={fs}", f"PriorityWeightJobSize={size}",
                                f"PriorityWeightAge={age}", "PriorityMaxAge=7-0",
                                f"PriorityFavorSmall={small}", "PriorityDecayHalfLife=1-0"]
                r = q.ranks(SlurmConfig.from_text("\n".join(lines) + "\n", "probe"))
                rows.append((rank_bound(r), fs, age, size, small, float(np.median(r)), float(np.mean(r == 0))))
for b, fs, age, size, small, med, top in sorted(rows)[:25]:
    print(f"bound {b:5d} median {med:5.0f} top {top:.2f}: fairshare {fs} age {age} size {size} favorsmall {small}")
