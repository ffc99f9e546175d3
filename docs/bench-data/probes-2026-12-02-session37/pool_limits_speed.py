"""Exploratory (session 37): replay time and waits of a log split at random into two pools
(70 % of jobs in "a", 60 % of the nodes) under per-user limits, without the availability
timeline: python pool_limits_speed.py TRACE LIMITS DEPTH."""

import sys
import time
from dataclasses import replace

import numpy as np

from sim.fit import replay_waits
from sim.profile import load
from sim.traces.read import read_trace

tr = read_trace(sys.argv[1])
rng = np.random.default_rng(0)
tr = replace(tr, partitions=["a" if x < 0.7 else "b" for x in rng.random(len(tr.submit))])
p = load(read_trace(sys.argv[1]))
u = p.units
p = replace(
    p,
    pools={"a": int(u * 0.6), "b": u - int(u * 0.6)},
    shared_partitions=[],
    limits=sys.argv[2],
    larger_jobs_exempt=True,
    user_limits=[],
    window_s=None,
    narrow_s=None,
    outage_s=None,
    bf_max_job_test=int(sys.argv[3]),
)
t = time.process_time()
w = replay_waits(tr, p)
print(
    sys.argv[2:],
    f"CPU-s {time.process_time() - t:.2f}",
    f"mean wait h {np.nanmean(w) / 3600:.4f}",
    f"p90 {np.nanpercentile(w, 90) / 3600:.4f}",
)
