"""RICC's recorded start order under the grid's priorities and under ones that favour small
jobs (PriorityFavorSmall=YES): the ranks' 98th percentile (sim.start_order's bound)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

from sim.config import SlurmConfig  # noqa: E402
from sim.profile import PRIORITY_SETTINGS  # noqa: E402
from sim.start_order import Queues, grid_config, rank_bound  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else "/work/ricc/RICC-2010-2.swf.gz"
trace = read_trace(path)
units = int(trace.total_units or trace.units.max())
q = Queues(trace, units, None)
print(f"{len(q.started)} sampled starts with a queue; queue length median {np.median(q.lengths):.0f}")
for k in PRIORITY_SETTINGS:
    r = q.ranks(grid_config(k))
    print(f"{k:24s} bound {rank_bound(r):6d}  median {np.median(r):7.0f}  top {np.mean(r == 0):.2f}")
base = ["AccountingStorageType=accounting_storage/slurmdbd", "PriorityType=priority/multifactor"]
for fs, size, half in [(0, 100000, "7-0"), (100000, 10000, "7-0"), (100000, 100000, "7-0"),
                       (100000, 1000000, "7-0"), (100000, 100000, "1-0"), (100000, 1000000, "1-0")]:
    lines = base + [f"PriorityWeightFairshare={fs}", f"PriorityWeightJobSize={size}",
                    "PriorityFavorSmall=YES", f"PriorityDecayHalfLife={half}"]
    cfg = SlurmConfig.from_text("\n".join(lines) + "\n", "favor small")
    r = q.ranks(cfg)
    print(f"favorsmall fs={fs} size={size} half={half}: bound {rank_bound(r):6d}  median {np.median(r):7.0f}  top {np.mean(r == 0):.2f}")
