"""Per-user remaining limit node-hours of running jobs at each recorded start of the LS6 log:
is there a running-time cap (GrpTRESRunMins-like) below the node cap x the 48-h limit?
Run from the repository root: .venv/bin/python docs/bench-data/probes-2026-11-27-session16/ls6_running_node_hours.py"""
import numpy as np
from sim.traces.read import read_trace
tr = read_trace("../shared/traces/ls6-a100.log")
ok = np.isfinite(tr.recorded_start)
s = tr.recorded_start[ok]; rt = tr.runtime[ok]; lim = tr.limit[ok]; u = tr.units[ok]; usr = tr.user[ok]
e = s + rt
print("jobs", ok.sum(), "users", len(np.unique(usr)))
# at each job start: the user's remaining limit-node-seconds of running jobs (incl. this one)
order = np.argsort(s, kind="stable")
from collections import defaultdict
run = defaultdict(list)  # user -> list of (start, limit_end, nodes, end)
peak = defaultdict(float); peak_jobs = defaultdict(int)
vals = []
for i in order:
    t = s[i]; k = usr[i]
    lst = [x for x in run[k] if x[3] > t]
    lst.append((t, t + lim[i], u[i], e[i]))
    run[k] = lst
    rm = sum(n * (le - t) for (_, le, n, _) in lst) / 3600.0  # node-hours remaining
    vals.append((k, t, rm, len(lst)))
    if rm > peak[k]: peak[k] = rm
arr = np.array([v[2] for v in vals])
pk = np.array(sorted(peak.values(), reverse=True))
print("per-user peak remaining node-hours (top 40):", np.round(pk[:40]).astype(int).tolist())
print("quantiles of all start-time values:", np.percentile(arr, [50, 90, 99, 99.9, 100]).round(1))
# two thirds split
span0, span1 = s.min(), s.max(); cut = span0 + (span1 - span0) * 2 / 3
for name, m in (("first 2/3", lambda t: t < cut), ("last 1/3", lambda t: t >= cut)):
    pkk = defaultdict(float)
    for k, t, rm, nj in vals:
        if m(t): pkk[k] = max(pkk[k], rm)
    p = np.array(sorted(pkk.values(), reverse=True))
    print(name, "top 25 user peaks:", np.round(p[:25]).astype(int).tolist())
