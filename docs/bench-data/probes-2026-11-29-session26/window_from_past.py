"""The flag-free availability window chosen inside each log's own past (seen logs; exploratory).

For each log and window W in WINDOWS_H: the flag-free replay (`hpcsim replay LOG --no-profile
--no-calibration`, the window set to W, narrowed beside idle units to min(1 h, W)). Its mean
simulated / recorded wait on the fit period (sim.fit.split: after the warm-up, before two
thirds of the span) and on the held-out last third. W is chosen by the fit period's
|ln ratio| (ties: the longer window); the held-out ratio at it is set beside today's 6 h.
The replay is causal, so the held-out jobs do not steer the fit period's waits.
Usage: window_from_past.py OUT.csv LOG...
"""
import contextlib
import csv
import io
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import sim.replay_cli as rc  # noqa: E402
from sim.fit import split  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

WINDOWS_H = (1, 3, 6, 12, 24, 48)
out_csv, logs = sys.argv[1], sys.argv[2:]
rows = []


def ratio(df, mask):
    d = df[mask]
    return float(d["wait"].mean() / d["recorded_wait"].mean())


for log in logs:
    trace = read_trace(log)
    fit_mask, held_mask, _ = split(trace)
    fit_ids, held_ids = set(trace.job_id[fit_mask].tolist()), set(trace.job_id[held_mask].tolist())
    for w in WINDOWS_H:
        rc.DEFAULT_WINDOW_S, rc.DEFAULT_NARROW_S = w * 3600.0, min(1, w) * 3600.0
        sched = tempfile.mktemp(suffix=".csv")
        t0 = time.time()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = rc.main([log, "--no-progress", "--no-profile", "--no-calibration", "--out", sched])
        df = pd.read_csv(sched)
        Path(sched).unlink()
        df = df[np.isfinite(df["recorded_start"])]
        rows.append({
            "log": Path(log).name, "window_h": w, "rc": code,
            "fit_ratio": ratio(df, df["job_id"].isin(fit_ids)),
            "held_ratio": ratio(df, df["job_id"].isin(held_ids)),
            "whole_ratio": ratio(df, df["job_id"] == df["job_id"]),
            "seconds": round(time.time() - t0, 1),
        })
        print(rows[-1], flush=True)
with open(out_csv, "w", newline="") as f:
    wr = csv.DictWriter(f, fieldnames=list(rows[0]))
    wr.writeheader()
    wr.writerows(rows)
df = pd.DataFrame(rows)
print("\nthe window chosen on each log's fit period, and its held-out last third")
hits = {"chosen": 0, "6 h": 0}
for name, g in df.groupby("log", sort=False):
    err = np.abs(np.log(g["fit_ratio"]))
    best = g.loc[(err - 1e-9 * g["window_h"]).idxmin()]
    six = g[g["window_h"] == 6].iloc[0]
    ok_c = 1 / 1.5 <= best["held_ratio"] <= 1.5
    ok_6 = 1 / 1.5 <= six["held_ratio"] <= 1.5
    hits["chosen"] += ok_c
    hits["6 h"] += ok_6
    print(f"{name}: chosen {best['window_h']:g} h (fit x{best['fit_ratio']:.2f}) -> held-out "
          f"x{best['held_ratio']:.2f} ({'within' if ok_c else 'outside'} 1.5x); at 6 h held-out "
          f"x{six['held_ratio']:.2f} ({'within' if ok_6 else 'outside'})")
print(f"RESULT window_from_past logs={df['log'].nunique()} held_within_1.5x_chosen={hits['chosen']} "
      f"held_within_1.5x_6h={hits['6 h']}")
