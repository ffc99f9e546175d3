#!/usr/bin/env python
"""LS6's 17 jobs of 17-64 nodes, whole log, shipped profile: bf_window and availability."""
import numpy as np
from sim.traces import read_trace
from sim.profile import load
from sim.engine import Simulator
from sim.limit_breaks import limit_steps
from sim.fit import simulated_waits
tr = read_trace("../shared/traces/ls6-a100.log")
prof = load(tr)
rec = tr.recorded_start - tr.submit
big = tr.units > 16
for avail in ("shipped", "none (80 nodes)"):
    for win_h in (24, 120):
        cfg = prof.config(); cfg.bf_window = win_h * 3600.0
        lim = prof.qos()
        sim = Simulator(tr, cfg, total_units=prof.units, seed=0, limits=lim, availability=prof.availability(tr) if avail == "shipped" else None, limit_steps=limit_steps(tr, lim))
        w = simulated_waits(sim, len(tr))
        print(f"availability {avail:16s} bf_window {win_h:3d} h: 17-64-node jobs mean {np.nanmean(w[big])/3600:6.1f} h, max {np.nanmax(w[big])/3600:4.0f} h (recorded {rec[big].mean()/3600:.1f} h, max {rec[big].max()/3600:.0f} h); all jobs mean {np.nanmean(w)/3600:.2f} h (recorded {rec.mean()/3600:.2f})", flush=True)
