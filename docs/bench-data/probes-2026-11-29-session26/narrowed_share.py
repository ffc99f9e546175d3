"""How much of each log's span the narrowing covers, and how many jobs call on it (seen logs).
Usage: narrowed_share.py LOG..."""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from sim.availability import fitted, recorded_usage, waiting_bins  # noqa: E402
from sim.idle_waits import waited_beside_idle  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

for log in sys.argv[1:]:
    t = read_trace(log)
    use = recorded_usage(t)
    total = max(t.total_units or 0, use.peak)
    wide = fitted(use, total, window=6 * 3600.0)
    beside = waited_beside_idle(t, total, wide)
    step = 900.0
    t0 = math.floor(use.times[0] / step) * step
    n = int(math.ceil((use.times[-1] - t0) / step)) + 1
    narrowed = waiting_bins(t.select(beside), t0, step, n).mean()
    waiting = waiting_bins(t, t0, step, n).mean()
    print(f"{Path(log).name}: {beside.sum()} of {len(t)} jobs beside idle ({100 * beside.mean():.1f} %), "
          f"narrowed {100 * narrowed:.0f} % of the span, some job waiting {100 * waiting:.0f} %", flush=True)
