import sys, time
sys.path.insert(0, "/work/main")
import numpy as np
from sim.traces import read_trace
from sim.fit import starting_profile, _with_option, replay_waits, split
from sim.log_inference import pool_candidates
t = read_trace("/work/ricc/RICC-2010-2.swf.gz")
prof = starting_profile(t, recent=None)
opts = pool_candidates(t)
print([ (o[0], o[2]) for o in opts])
for o in opts:
    p = _with_option(prof, "pools", o, prof.units)
    c = time.process_time()
    try:
        w = replay_waits(t, p, max_pending=10000)
        print(p.describe()[:120], f"{time.process_time()-c:.1f} CPU-s", flush=True)
    except Exception as e:
        print("stopped", e, f"{time.process_time()-c:.1f} CPU-s", flush=True)
