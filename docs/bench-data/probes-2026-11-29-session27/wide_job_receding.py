#!/usr/bin/env python
"""LS6, fixed 80 nodes, bf_window 120 h: one 64-node job (trace index 16964) every half hour:
its place, free nodes, start estimate, the jobs started since and their limits."""
import numpy as np
from sim.traces import read_trace
from sim.profile import load
from sim.engine import Simulator
from sim.limit_breaks import limit_steps
tr = read_trace("../shared/traces/ls6-a100.log")
prof = load(tr)
cfg = prof.config(); cfg.bf_window = 120 * 3600.0
lim = prof.qos()
sim = Simulator(tr, cfg, total_units=prof.units, seed=0, limits=lim, availability=None, limit_steps=limit_steps(tr, lim))
J = 16964; s = tr.submit[J]; st = sim.state
starts = []
sim.on_start = lambda i, now: starts.append((i, now))
sim.advance(s + 10.5*3600)
jid = [c for c in st.pending.values() if c.tidx == J][0].id
h = 10.5
while h < 60:
    h += 0.5
    n0 = len(starts)
    sim.advance(s + h*3600)
    job = st.pending.get(jid)
    if job is None: print("started at", h); break
    new = starts[n0:]
    run = list(st.running.values())
    ends_after = sorted(((j.start + j.limit - s)/3600, j.units) for j in run)
    # nodes held past +42.1
    print(f"+{h:.1f}h pos {st.order.index(job)} free {sim.free} est +{(sim.estimate_start(jid)-s)/3600:.2f} started {[(sim.job(i).units, round(sim.job(i).limit/3600,1), sim.job(i).backfill) for i,_ in new]} units by limit-end: <=42.1: {sum(u for e,u in ends_after if e<=42.1)}, >42.1: {sum(u for e,u in ends_after if e>42.1)}")
