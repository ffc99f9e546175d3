"""The clamp's 'jobs waited' counting only jobs whose user was under the profile's per-user
limits in that bin (a wait for resources, not for the user's own limit)."""
import sys
from dataclasses import replace
import numpy as np
from heldout import report, trace_and_profile
import sim.availability as A
tr, prof = trace_and_profile()
LJ, LN = 8, 16
orig = A.waiting_bins
def user_binned(trace, t0, step, n):
    """per user: max running jobs and nodes in each bin (recorded)."""
    ok = np.isfinite(trace.recorded_start)
    users = np.asarray(trace.user)[ok]; st = trace.recorded_start[ok]; en = st + np.maximum(trace.runtime[ok], 0); u = trace.units[ok].astype(np.int64)
    a = np.clip(((st - t0)//step).astype(np.int64), 0, n); b = np.clip(((en - t0)//step).astype(np.int64)+1, 0, n)
    out = {}
    for us in np.unique(users):
        m = users == us
        dj = np.zeros(n+1, np.int64); dn = np.zeros(n+1, np.int64)
        np.add.at(dj, a[m], 1); np.add.at(dj, b[m], -1)
        np.add.at(dn, a[m], u[m]); np.add.at(dn, b[m], -u[m])
        out[us] = (np.cumsum(dj)[:n], np.cumsum(dn)[:n])
    return out
def waiting_bins_res(trace, t0, step, n, after=600.0):
    recs = trace.recorded_start
    ok = np.isfinite(recs) & (recs - trace.submit > after)
    ub = user_binned(trace, t0, step, n)
    res = np.zeros(n, bool)
    users = np.asarray(trace.user)
    for i in np.flatnonzero(ok):
        a = int(np.clip((trace.submit[i] + after - t0)//step, 0, n)); b = int(np.clip((recs[i]-t0)//step + 1, 0, n))
        if a >= b: continue
        j, nd = ub[users[i]]
        free = (j[a:b] < LJ) & ((nd[a:b] + trace.units[i] <= LN) | (trace.units[i] > LN))
        res[a:b] |= free
    return res
variants = [
    ('fifo c0', replace(prof, clamp=(0.0, 0.0))),
    ('fifo c0.025', replace(prof, clamp=(0.0, 0.025))),
    ('fifo c1h', replace(prof, clamp=(3600.0, 0.0))),
    ('fifo c1h.025', replace(prof, clamp=(3600.0, 0.025))),
    ('fs3.5 c0.025', replace(prof, priority='fairshare-3.5d', clamp=(0.0, 0.025))),
    ('fs3.5 6h c0.025', replace(prof, priority='fairshare-3.5d', window_s=6*3600.0, clamp=(0.0, 0.025))),
]
for mode in sys.argv[1:]:
    A.waiting_bins = orig if mode == 'orig' else waiting_bins_res
    for name, p in variants:
        report(f"{mode} {name}", tr, p)
