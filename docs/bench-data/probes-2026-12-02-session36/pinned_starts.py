"""Exploratory (session 36): starts pinned to the end of the user's own job at a wall."""
import numpy as np

def _counts_before(keys_sorted, cum, q):
    i = np.searchsorted(keys_sorted, q, side="right")
    return np.where(i > 0, cum[np.maximum(i - 1, 0)], 0)

def pinned(trace, W, kind, tol=60.0):
    """Per job: whether it started within tol of the end of one of its user's own jobs while
    the user's other jobs (ended within tol counted as running) held the wall W."""
    ok = np.isfinite(trace.recorded_start)
    s = np.where(ok, trace.recorded_start, np.nan); e = s + np.maximum(trace.runtime, 0)
    amt = np.ones(len(trace), np.int64) if kind == "jobs" else trace.units.astype(np.int64)
    counted = ok if kind == "jobs" else ok & (trace.units <= W)
    _, uid = np.unique(trace.user, return_inverse=True)
    t0 = np.nanmin(s[ok]) - 2 * tol; span = np.nanmax(e[ok]) - t0 + 2 * tol + 1
    def key(u, t): return u * span + (t - t0)
    ks = key(uid[counted], s[counted]); o = np.argsort(ks, kind="stable"); ks = ks[o]; cs = np.cumsum(amt[counted][o])
    ke = key(uid[counted], e[counted]); o2 = np.argsort(ke, kind="stable"); ke = ke[o2]; ce = np.cumsum(amt[counted][o2]); ne = np.cumsum(np.ones(o2.size, np.int64))
    q = np.flatnonzero(ok)
    t = s[q]; u = uid[q]
    started_before = _counts_before(ks, cs, np.nextafter(key(u, t), -np.inf))
    ended_by = _counts_before(ke, ce, key(u, t - tol))
    held = started_before - ended_by
    n_end_now = _counts_before(ke, ne, key(u, t)) - _counts_before(ke, ne, key(u, t - tol))
    need = (held >= W) if kind == "jobs" else (held + trace.units[q] > W) & (trace.units[q] <= W)
    out = np.zeros(len(trace), bool)
    out[q] = (n_end_now > 0) & need
    return out
