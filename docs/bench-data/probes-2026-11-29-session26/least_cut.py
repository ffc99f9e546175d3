"""The least capacity cut the record proves (seen logs; exploratory): while a job waited that
would have fit, for its whole limit, in units the 6-h window left idle, the scheduler had
fewer than (the bin's recorded use + that job's size) units: the capacity there is the 6-h
window, at most the bin's use plus the smallest such job's size less one. Against the
shipped narrowing to a 1-h window.
Usage: least_cut.py MODE LOG...  (MODE: base | least | both: the larger of the two cuts' caps)
"""
import contextlib
import io
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
import sim.idle_waits as iw  # noqa: E402
import sim.profile as pr  # noqa: E402
import sim.replay_cli as rc  # noqa: E402
from sim.availability import Availability, fitted, recorded_usage  # noqa: E402
from sim.report import compare  # noqa: E402

mode, logs = sys.argv[1], sys.argv[2:]
orig = iw.narrowed_beside_idle


def steps(a, t0, step, n, units):
    change = np.r_[True, a[1:] != a[:-1]]
    times = (t0 + step * np.flatnonzero(change)).tolist() + [t0 + step * n]
    return Availability(tuple(float(x) for x in times), tuple(int(u) for u in a[change].tolist() + [units]))


def at_bins(avail, edges, units):
    at = np.searchsorted(np.asarray(avail.times), edges, side="right") - 1
    return np.where(at >= 0, np.asarray(avail.units)[np.maximum(at, 0)], units)


def patched(trace, units, *, window, narrow, use=None, step=900.0):
    if mode == "base":
        return orig(trace, units, window=window, narrow=narrow, use=use)
    use = recorded_usage(trace) if use is None else use
    wide = fitted(use, units, window=window)
    if not wide.times:
        return wide
    beside = iw.waited_beside_idle(trace, units, wide)
    t0 = math.floor(use.times[0] / step) * step
    n = int(math.ceil((use.times[-1] - t0) / step)) + 1
    edges = t0 + step * np.arange(n)
    w = at_bins(wide, edges, units)
    peak = use.binned_max(t0, step, n)
    smallest = np.full(n, np.iinfo(np.int64).max)
    idx = np.flatnonzero(beside)
    a = np.clip(((trace.submit[idx] + 600 - t0) // step).astype(np.int64), 0, n)
    b = np.clip(((trace.recorded_start[idx] - t0) // step).astype(np.int64) + 1, 0, n)
    for s in np.unique(trace.units[idx]).tolist():
        m = trace.units[idx] == s
        d = np.zeros(n + 1, np.int64)
        np.add.at(d, a[m], 1)
        np.add.at(d, b[m], -1)
        cover = np.cumsum(d)[:n] > 0
        smallest = np.where(cover & (smallest > s), s, smallest)
    cap = np.where(smallest < np.iinfo(np.int64).max, peak + smallest - 1, w)
    out = np.minimum(w, cap)
    if mode == "both":
        narrowed = at_bins(orig(trace, units, window=window, narrow=narrow, use=use), edges, units)
        out = np.maximum(out, narrowed)
    return steps(np.minimum(out, units), t0, step, n, units)


iw.narrowed_beside_idle = pr.narrowed_beside_idle = patched
for log in logs:
    extra = []
    if log == "self":
        from tests.sim.recorded import write_recorded
        log = str(write_recorded(Path(tempfile.mkdtemp()) / "rec.swf", units=24))
        extra = ["--nodes", "24"]
    sched = tempfile.mktemp(suffix=".csv")
    t1 = time.time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = rc.main([log, "--no-progress", "--no-profile", "--no-calibration", "--out", sched, *extra])
    s = pd.read_csv(sched)
    s = s[np.isfinite(s["recorded_start"])]
    c = compare(s, 1)
    sw, rw = s["wait"].mean(), s["recorded_wait"].mean()
    exact = float(np.mean(np.isclose(s["start"], s["recorded_start"])))
    print(f"{mode} {Path(log).name}: x{sw / rw:.3f} ({sw / 3600:.2f} / {rw / 3600:.2f} h), "
          f"Spearman {c.spearman:.3f}, KS {c.ks:.3f}, exact {exact:.3f}, rc {code}, "
          f"{time.time() - t1:.0f} s", flush=True)
