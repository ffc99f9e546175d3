#!/usr/bin/env python
"""LS6's 17 jobs of 17-64 nodes, whole log, fixed 80 nodes, bf_window 120 h: priority's part."""
import numpy as np
from dataclasses import replace
from sim.traces import read_trace
from sim.profile import load
from sim.engine import Simulator
from sim.limit_breaks import limit_steps
from sim.fit import simulated_waits
tr = read_trace("../shared/traces/ls6-a100.log")
rec = tr.recorded_start - tr.submit
big = tr.units > 16
for pr in ("fairshare-3.5d", "fifo"):
    prof = replace(load(tr), priority=pr)
    for limits in (True, False):
        cfg = prof.config(); cfg.bf_window = 120 * 3600.0
        lim = prof.qos() if limits else None
        sim = Simulator(tr, cfg, total_units=prof.units, seed=0, limits=lim, availability=None, limit_steps=limit_steps(tr, lim) if lim else ())
        w = simulated_waits(sim, len(tr))
        print(f"priority {pr:15s} limits {limits!s:5s}: 17-64-node jobs mean {np.nanmean(w[big])/3600:6.1f} h, max {np.nanmax(w[big])/3600:4.0f} h (recorded {rec[big].mean()/3600:.1f}); all {np.nanmean(w)/3600:.2f} h", flush=True)
