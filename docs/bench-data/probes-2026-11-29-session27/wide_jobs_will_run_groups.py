#!/usr/bin/env python
"""LS6's 17 jobs of 17-64 nodes, whole log, fixed 80 nodes, bf_window 120 h, fair share and
the per-user limits: the backfill map with Slurm's will-run groups (30-s first window,
doubling) or freed job by job (window 0)."""
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
for avail in (False, True):
    for window in (30.0, 0.0):
        cfg = prof.config(); cfg.bf_window = 120 * 3600.0
        lim = prof.qos()
        sim = Simulator(tr, cfg, total_units=prof.units, seed=0, limits=lim, availability=prof.availability(tr) if avail else None, limit_steps=limit_steps(tr, lim))
        sim._params.window = window
        w = simulated_waits(sim, len(tr))
        print(f"availability {'shipped' if avail else 'none (80)'}, will-run window {window:g} s: 17-64-node jobs mean {np.nanmean(w[big])/3600:6.1f} h, max {np.nanmax(w[big])/3600:4.0f} h (recorded {rec[big].mean()/3600:.1f}); all jobs {np.nanmean(w)/3600:.2f} h", flush=True)
