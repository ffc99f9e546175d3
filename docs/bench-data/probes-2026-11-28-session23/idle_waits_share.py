"""The share of the recorded wait sim.idle_waits flags, per log, with the flag-free 6-h
window (session 23).  python idle_waits_share.py LOG..."""
import sys, time, numpy as np
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from sim.traces import read_trace
from sim.availability import recorded_usage, fitted
from sim.idle_waits import waited_beside_idle
for p in sys.argv[1:]:
    t = read_trace(p)
    use = recorded_usage(t); total = max(t.total_units or 0, use.peak)
    av = fitted(use, total, window=6*3600)
    c = time.process_time()
    m = waited_beside_idle(t, total, av)
    w = t.recorded_start - t.submit
    print(p.split('/')[-1], m.sum(), f"{m.mean():.1%} jobs, {np.nansum(w[m])/np.nansum(w):.0%} of wait, {time.process_time()-c:.2f} CPU-s")
