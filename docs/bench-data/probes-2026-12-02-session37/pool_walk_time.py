"""Exploratory (session 37): pool_limits_speed.py's replay, timing the node-pool backfill
walk alone (`Simulator._walk_pools`, every call): python pool_walk_time.py TRACE LIMITS DEPTH."""

import runpy
import time
from pathlib import Path

from sim.engine import Simulator

orig = Simulator._walk_pools
acc = {"s": 0.0, "calls": 0}


def timed(self, *a, **k):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    r = orig(self, *a, **k)
    acc["s"] += time.perf_counter() - t
    acc["calls"] += 1
    return r


Simulator._walk_pools = timed  # type: ignore[method-assign]
runpy.run_path(str(Path(__file__).with_name("pool_limits_speed.py")), run_name="__main__")
print(f"walk {acc['s']:.3f} s over {acc['calls']} calls", flush=True)
