"""A runaway guard for the flag-free window (seen logs; exploratory). The replay's most
jobs pending at once against the recorded schedule's (sim.fit.recorded_max_pending); where
the replay queues more than RUNAWAY_FACTOR (10) times as many, its capacity is too small:
relax it: the shipped 6 h narrowed to 1 h beside idle units, then
(with --relax) the 6-h window not narrowed, then 24 h, 72 h and 30 days, until it does not. Prints each log's windows tried and the mean ratio kept.
Usage: runaway_guard.py LOG..."""
import contextlib
import io
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import sim.replay_cli as rc  # noqa: E402
from sim.fit import RUNAWAY_FACTOR, recorded_max_pending  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

RELAX = "--relax" in sys.argv
if RELAX:
    sys.argv.remove("--relax")
WINDOWS_H = ((6, 1), (6, 6), (24, 24), (72, 72), (720, 720)) if RELAX else ((6, 1), (24, 1), (72, 1), (720, 1))


def max_pending(submit, start):
    t = np.concatenate([submit, start])
    d = np.concatenate([np.ones(len(submit)), -np.ones(len(start))])
    order = np.lexsort((d, t))  # a start before a submission at the same moment (as recorded_max_pending)
    return int(np.max(np.cumsum(d[order])))


hits = {"6 h": 0, "guarded": 0}
for log in sys.argv[1:]:
    trace = read_trace(log)
    bound = RUNAWAY_FACTOR * recorded_max_pending(trace)
    tried = []
    for w, nw in WINDOWS_H:
        rc.DEFAULT_WINDOW_S, rc.DEFAULT_NARROW_S = w * 3600.0, nw * 3600.0
        sched = tempfile.mktemp(suffix=".csv")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rc.main([log, "--no-progress", "--no-profile", "--no-calibration", "--out", sched])
        s = pd.read_csv(sched)
        Path(sched).unlink()
        pend = max_pending(s["submit"].to_numpy(), s["start"].fillna(np.inf).to_numpy())
        s = s[np.isfinite(s["recorded_start"])]
        ratio = s["wait"].mean() / s["recorded_wait"].mean()
        tried.append((f"{w}/{nw}", pend, ratio))
        if pend <= bound:
            break
    first, kept = tried[0], tried[-1]
    hits["6 h"] += 1 / 1.5 <= first[2] <= 1.5
    hits["guarded"] += 1 / 1.5 <= kept[2] <= 1.5
    print(f"{Path(log).name}: bound {bound} pending; "
          + "; ".join(f"{w} h: {p} pending, x{r:.2f}" for w, p, r in tried), flush=True)
print(f"RESULT runaway_guard logs={len(sys.argv) - 1} within_1.5x_6h={hits['6 h']} "
      f"within_1.5x_guarded={hits['guarded']}")
