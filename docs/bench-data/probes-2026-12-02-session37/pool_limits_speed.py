"""Exploratory (session 37): replay time and waits of LS6 split at random into two pools (70 % of jobs in "a", 60 % of the nodes) under per-user limits: python pool_limits_speed.py TRACE LIMITS DEPTH."""
import sys, time
from dataclasses import replace
import numpy as np
from sim.profile import load
from sim.fit import replay_waits
from sim.traces.read import read_trace
tr = read_trace(sys.argv[1])
rng = np.random.default_rng(0)
parts = ["a" if x < 0.7 else "b" for x in rng.random(len(tr.submit))]
tr = replace(tr, partitions=parts)
p = load(read_trace(sys.argv[1]))
u = p.units
p = replace(p, pools={"a": int(u * 0.6), "b": u - int(u * 0.6)}, shared_partitions=[], limits=sys.argv[2], larger_jobs_exempt=True, user_limits=[], window_s=None, narrow_s=None, outage_s=None, bf_max_job_test=int(sys.argv[3]))
t = time.process_time()
w = replay_waits(tr, p)
print(sys.argv[2:], "CPU-s %.2f" % (time.process_time() - t), "mean wait h %.4f" % (np.nanmean(w) / 3600), "p90 %.4f" % (np.nanpercentile(w, 90) / 3600))
