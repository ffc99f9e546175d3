"""METACENTRUM's twin profile of session 25, rebuilt from its printed description, its
held-out third replayed with one setting changed at a time (seen log; exploratory): is it
the pools' sizes (whole-log peaks already) or the pools' separate availability windows?
Usage: metacentrum_pools.py LOG"""
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from sim.fidelity import fidelity  # noqa: E402
from sim.fit import replay_waits, split, starting_profile  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

trace = read_trace(sys.argv[1])
_, held, _ = split(trace)
rec = (trace.recorded_start - trace.submit)[held]
pools = {"1": 162, "10": 4, "11": 8, "2": 102, "3": 437, "4": 60, "5": 20, "6": 100, "7": 8, "9": 41}
base = replace(
    starting_profile(trace), units=sum(pools.values()), pools=pools, tiers={"3": 2},
    priority="fifo", batch_sched_delay=0.0, limits="MaxTRESPerUser=node=160",
    window_s=3600.0, outage_s=2 * 3600.0,
)
variants = {
    "session 25's profile (as printed)": base,
    "no tiers": replace(base, tiers={}),
    "6-h window": replace(base, window_s=6 * 3600.0),
    "24-h window": replace(base, window_s=86400.0),
    "no outages": replace(base, outage_s=None),
    "one pool (604), 1-h window": replace(base, pools={}, tiers={}, units=604),
    "one pool (604), 6-h window": replace(base, pools={}, tiers={}, units=604, window_s=6 * 3600.0),
}
for name, prof in variants.items():
    f = fidelity(replay_waits(trace, prof)[held], rec)
    print(f"{name}: held-out mean {f.sim_mean_h:.2f} / {f.rec_mean_h:.2f} h (x{f.sim_mean_h / f.rec_mean_h:.2f}), "
          f"Spearman {f.spearman:.3f}, KS {f.ks:.3f}", flush=True)
