"""Flag-free availability narrowed only while the record shows a job waiting beside idle units.

Modes (the replay's `fitted` call replaced; everything else as `hpcsim replay LOG --no-profile
--no-calibration`):
  base        today's 6-h window
  beside:S:L  an L-hour window, narrowed to an S-hour window during the recorded waits of the
              jobs that, at some moment of their wait, would have fit for their whole time
              limit in the units the recorded schedule left idle within the L-hour window
              (sim.idle_waits.waited_beside_idle)
Usage: beside_idle.py MODE LOG...   (LOG 'self' = the recorded-by-the-simulator test log)
"""
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import sim.availability as av  # noqa: E402
import sim.replay_cli as rc  # noqa: E402
from sim.idle_waits import waited_beside_idle  # noqa: E402

mode, logs = sys.argv[1], sys.argv[2:]
orig_fitted, orig_usage = av.fitted, av.recorded_usage
seen = {}


def usage(trace):
    seen["trace"] = trace
    return orig_usage(trace)


def fitted(use, total, *, window, **kw):
    if mode == "base" or kw:
        return orig_fitted(use, total, window=window, **kw)
    _, s, l = mode.split(":")
    trace = seen["trace"]
    long = orig_fitted(use, total, window=float(l) * 3600)
    flag = waited_beside_idle(trace, total, long)
    seen["flagged"] = int(flag.sum())
    return orig_fitted(use, total, window=float(l) * 3600, waiting_trace=trace.select(flag),
                       waiting_window=float(s) * 3600)


av.fitted, av.recorded_usage = fitted, usage
for log in logs:
    extra = []
    if log == "self":
        sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
        from tests.sim.recorded import write_recorded
        log = str(write_recorded(Path(tempfile.mkdtemp()) / "rec.swf", units=24))
        extra = ["--nodes", "24"]
    sched = tempfile.mktemp(suffix=".csv")
    t0 = time.time()
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = rc.main([log, "--no-progress", "--no-profile", "--no-calibration", "--out", sched, *extra])
    s = pd.read_csv(sched)
    s = s[np.isfinite(s["recorded_start"])]
    sw, rw = s["start"] - s["submit"], s["recorded_start"] - s["submit"]
    exact = float(np.mean(np.isclose(s["start"], s["recorded_start"])))
    print(f"{mode} {Path(log).name}: ratio x{sw.mean() / rw.mean():.3f} (sim {sw.mean() / 3600:.2f} h, "
          f"rec {rw.mean() / 3600:.2f} h), spearman {s[['start']].assign(a=sw, b=rw)[['a', 'b']].corr('spearman').iloc[0, 1]:.3f}, "
          f"exact starts {exact:.3f}, flagged {seen.get('flagged', '-')}, rc {code}, {time.time() - t0:.1f} s", flush=True)
