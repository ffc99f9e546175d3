"""Flag-free availability: the narrowed window only where a recorded job was waiting.

Mode 'base': the default (sim.idle_waits.narrowed_beside_idle). Mode 'free:A': the same, but
in every 15-min bin in which no recorded job had been waiting A seconds or more, the whole
cluster (the pool's units): a recorded use there shows demand, not a capacity limit.
Usage: free_when_none_wait.py MODE LOG...   (LOG 'self' = the recorded-by-the-simulator log)
Prints one line per log: the mean simulated / recorded wait, Spearman, KS, exact starts.
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
from sim.availability import Availability, recorded_usage, waiting_bins  # noqa: E402
from sim.report import compare  # noqa: E402

mode, logs = sys.argv[1], sys.argv[2:]
orig = iw.narrowed_beside_idle


def patched(trace, units, *, window, narrow, use=None, step=900.0):
    avail = orig(trace, units, window=window, narrow=narrow, use=use)
    if mode == "base" or not avail.times:
        return avail
    after = float(mode.split(":")[1])
    use = recorded_usage(trace) if use is None else use
    t0 = math.floor(use.times[0] / step) * step
    n = int(math.ceil((use.times[-1] - t0) / step)) + 1
    edges = t0 + step * np.arange(n)
    at = np.searchsorted(np.asarray(avail.times), edges, side="right") - 1
    a = np.where(at >= 0, np.asarray(avail.units)[np.maximum(at, 0)], units)
    a = np.where(waiting_bins(trace, t0, step, n, after=after), a, units)
    change = np.r_[True, a[1:] != a[:-1]]
    times = (t0 + step * np.flatnonzero(change)).tolist() + [t0 + step * n]
    vals = a[change].tolist() + [units]
    return Availability(tuple(float(x) for x in times), tuple(int(u) for u in vals))


iw.narrowed_beside_idle = pr.narrowed_beside_idle = patched
for log in logs:
    extra = []
    if log == "self":
        from tests.sim.recorded import write_recorded
        log = str(write_recorded(Path(tempfile.mkdtemp()) / "rec.swf", units=24))
        extra = ["--nodes", "24"]
    sched = tempfile.mktemp(suffix=".csv")
    t0 = time.time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = rc.main([log, "--no-progress", "--no-profile", "--no-calibration", "--out", sched, *extra])
    s = pd.read_csv(sched)
    s = s[np.isfinite(s["recorded_start"])]
    if not len(s):
        print(f"{mode} {Path(log).name}: no recorded starts", flush=True)
        continue
    c = compare(s, 1)
    sw, rw = s["wait"].mean(), s["recorded_wait"].mean()
    exact = float(np.mean(np.isclose(s["start"], s["recorded_start"])))
    print(f"{mode} {Path(log).name}: x{sw / rw:.3f} ({sw / 3600:.2f} / {rw / 3600:.2f} h), "
          f"Spearman {c.spearman:.3f}, KS {c.ks:.3f}, exact {exact:.3f}, rc {code}, "
          f"{time.time() - t0:.0f} s", flush=True)
