"""Exploratory (session 36): LS6 job 16964 at the head of the queue, with and without
MaxJobsPerUser=8 (no availability timeline): its squeue --start every 10 min.

    PYTHONPATH=. python ls6_large_job_estimates.py limits|none
"""
import sys
from dataclasses import replace
import numpy as np
from sim.profile import load
from sim.traces.read import read_trace
tr = read_trace("../shared/traces/ls6-a100.log")
lim = sys.argv[1] == "limits"
p = replace(load(tr), window_s=None, narrow_s=None, outage_s=None, **({"limits": "MaxJobsPerUser=8", "larger_jobs_exempt": False} if lim else {"limits": "", "larger_jobs_exempt": False, "user_limits": []}))
sim = p.simulator(tr)
i = 16964; t0 = tr.submit[i]
sim.advance(t0 + 1)
st = sim.state
jid = next(j for j, job in st.pending.items() if job.tidx == i)
none = found = 0; leads = []
for k in range(0, 2000):
    t = t0 + 1 + k * 600
    sim.advance(t)
    if jid not in st.pending:
        print("started", (t - t0) / 3600); break
    if st.order[0] is not st.pending[jid]:
        continue
    e = sim.estimate_start(jid)
    if e is None: none += 1
    else: found += 1; leads.append((e - st.now) / 3600)
    if k % 36 == 0:
        print(f"+{(t-t0)/3600:.1f} h free {st.free} estimate {'none' if e is None else f'+{(e-st.now)/3600:.1f} h from now'}; running ends within 24 h: {sum(1 for r in st.running.values() if r.start + r.limit < st.now + 86400)} of {len(st.running)}")
print(lim, "moments at the head:", none + found, "no start within bf_window:", none, "lead h (median):", np.median(leads) if leads else None)
