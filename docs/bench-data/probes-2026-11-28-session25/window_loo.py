"""The flag-free replay's availability window, chosen leaving one log out (seen logs only).

For each real log and window, `hpcsim replay LOG --no-profile --no-calibration` with
`sim.replay_cli.DEFAULT_WINDOW_S` set to that window; the mean simulated wait over the
recorded one. Then, for each log, the window that the other logs put closest to their
recorded means (the mean |log ratio| over them), and that log's ratio at it: how a default
chosen without a log does on it. Usage: window_loo.py OUT.csv LOG...
"""
import contextlib
import csv
import io
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import sim.replay_cli as rc  # noqa: E402

WINDOWS_H = (1, 3, 6, 12, 24)
out_csv, logs = sys.argv[1], sys.argv[2:]
rows = []
for log in logs:
    for w in WINDOWS_H:
        rc.DEFAULT_WINDOW_S = w * 3600.0
        sched = "/tmp/window_loo_sched.csv"
        t0 = time.time()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = rc.main([log, "--no-progress", "--no-profile", "--no-calibration", "--out", sched])
        s = pd.read_csv(sched)
        s = s[np.isfinite(s["recorded_start"])]
        ratio = float((s["start"] - s["submit"]).mean() / (s["recorded_start"] - s["submit"]).mean())
        rows.append({"log": Path(log).name, "window_h": w, "ratio": ratio, "rc": code,
                     "seconds": round(time.time() - t0, 1)})
        print(rows[-1], flush=True)
with open(out_csv, "w", newline="") as f:
    wr = csv.DictWriter(f, fieldnames=list(rows[0]))
    wr.writeheader()
    wr.writerows(rows)
df = pd.DataFrame(rows)
names = list(dict.fromkeys(df["log"]))
print("\nleave one log out: the window the others choose, and the left-out log's ratio")
hits = 0
for name in names:
    others = df[df["log"] != name]
    err = others.groupby("window_h")["ratio"].apply(lambda r: float(np.mean(np.abs(np.log(r)))))
    best = int(err.idxmin())
    r = float(df[(df["log"] == name) & (df["window_h"] == best)]["ratio"].iloc[0])
    six = float(df[(df["log"] == name) & (df["window_h"] == 6)]["ratio"].iloc[0])
    ok = 1 / 1.5 <= r <= 1.5
    hits += ok
    print(f"{name}: chosen {best} h -> x{r:.2f} ({'within' if ok else 'outside'} 1.5x); at 6 h x{six:.2f}")
print(f"RESULT window_loo: {hits} of {len(names)} logs within 1.5x at the window the others chose")
