#!/usr/bin/env python
"""LS6's 64-node jobs in the shipped profile: why they wait hundreds of hours."""
import sys
import numpy as np
from sim.traces import read_trace
from sim.profile import load
from sim.engine import Simulator
from sim.limit_breaks import limit_steps
tr = read_trace("../shared/traces/ls6-a100.log")
prof = load(tr)
for win_h in (24, 120):
    cfg = prof.config(); cfg.bf_window = win_h * 3600.0
    lim = prof.qos()
    sim = Simulator(tr, cfg, total_units=prof.units, seed=0, limits=lim, availability=prof.availability(tr), limit_steps=limit_steps(tr, lim))
    J = 16964; s = tr.submit[J]; st = sim.state; jid = None
    counts = {"beyond depth 10": 0, "in depth, no start within bf_window": 0, "in depth, planned": 0, "held by a limit": 0}
    t = s + 60
    while True:
        sim.advance(t)
        if jid is None:
            jid = [c for c in st.pending.values() if c.tidx == J][0].id
        job = st.pending.get(jid)
        if job is None:
            break
        pos = st.order.index(job)
        r = sim.reason(jid)
        if r not in ("Resources", "Priority"):
            counts["held by a limit"] += 1
        elif pos >= 10:
            counts["beyond depth 10"] += 1
        elif sim.estimate_start(jid) is None:
            counts["in depth, no start within bf_window"] += 1
        else:
            counts["in depth, planned"] += 1
        t += 600
    n = sum(counts.values())
    print(f"bf_window {win_h} h: job {J} (64 nodes) waited {(sim.job(jid).start - s)/3600:.0f} h (recorded {(tr.recorded_start[J]-s)/3600:.1f} h); share of 10-min samples: " + ", ".join(f"{k} {v/n:.0%}" for k, v in counts.items()), flush=True)
