"""RICC's four partition worlds replayed once each from the fit's starting profile, with
their CPU time (session 23).  python ricc_pools.py"""
import sys, time
sys.path.insert(0, "/work/main")
import numpy as np
from sim.traces import read_trace
from sim.fit import starting_profile, _with_option, replay_waits, split
from sim.log_inference import log_partitions, nested_pools, partition_pools
t = read_trace("/work/ricc/RICC-2010-2.swf.gz")
prof = starting_profile(t, recent=None)
own = partition_pools(t)  # the worlds pool_candidates gave before session 23's share rule
opts = [({}, {}, []), ({}, {}, log_partitions(t)), (own, {}, []), (own, nested_pools(t, own), [])]
print([ (o[0], o[2]) for o in opts])
for o in opts:
    p = _with_option(prof, "pools", o, prof.units)
    c = time.process_time()
    try:
        w = replay_waits(t, p, max_pending=10000)
        print(p.describe()[:120], f"{time.process_time()-c:.1f} CPU-s", flush=True)
    except Exception as e:
        print("stopped", e, f"{time.process_time()-c:.1f} CPU-s", flush=True)
