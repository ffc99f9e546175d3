"""Exploratory (session 36): LS6's first 64-node held-out job (trace index 16964) with and
without MaxJobsPerUser=8 (no availability timeline): when it starts, and what started
while it waited."""
import sys
from dataclasses import replace
import numpy as np
from sim.profile import load
from sim.traces.read import read_trace
tr = read_trace("../shared/traces/ls6-a100.log")
base = replace(load(tr), window_s=None, narrow_s=None, outage_s=None)
i = 16964; t0 = tr.submit[i]
for name, p in (("limits", replace(base, limits="MaxJobsPerUser=8", larger_jobs_exempt=False)), ("none", replace(base, limits="", larger_jobs_exempt=False, user_limits=[]))):
    sim = p.simulator(tr)
    sim.run()
    recs = [r for r in sim.records if t0 + 3600 <= r.start < t0 + 60 * 3600]
    top = next(r for r in sim.records if r.trace_index == i)
    bf = sum(r.backfill for r in recs)
    # backfilled jobs whose expected end (start+limit) is after t0+60h: they can delay a reservation
    late = [r for r in recs if r.start + r.limit > t0 + 60 * 3600]
    print(name, "top start +h", (top.start - t0) / 3600, "starts in [1,60] h:", len(recs), "backfill", bf, "main", len(recs) - bf, "ending after +60h by limit:", len(late), "of which main", sum(not r.backfill for r in late))
    main_starts = [r for r in recs if not r.backfill][:8]
    for r in main_starts:
        print("   main start +%.2f h units %d limit %.1f h user %d" % ((r.start - t0) / 3600, r.units, r.limit / 3600, r.user))
