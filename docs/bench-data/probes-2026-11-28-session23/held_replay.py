"""The flag-free replay with the jobs held_jobs.py flags (they could have run to their limit
in nodes the record left idle, at some moment of their recorded wait: holds, dependencies,
begin times or limits the log does not show) made eligible only at their recorded start
(their submit moved there), against the shipped replay; fidelity over all jobs and over the
jobs not flagged, waits from the original submits (session 23, seen logs).
    python held_replay.py WINDOW_H LOG..."""
import contextlib
import io
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
sys.argv, logs = sys.argv[:2], sys.argv[2:]
exec(open(HERE / "held_jobs.py").read().replace('if __name__ == "__main__":', "if False:"))

import sim.replay_cli as rc  # noqa: E402
from sim.fidelity import fidelity  # noqa: E402
from sim.traces import read_trace, write_swf  # noqa: E402


def replay(path):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "o.csv"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rc.main([str(path), "--no-profile", "--no-progress", "--out", str(out)])
        return pd.read_csv(out).set_index("job_id")


for log in logs:
    t = read_trace(log)
    flagged = held(log)
    ids = t.job_id[flagged]
    base = replay(log)
    with tempfile.TemporaryDirectory() as tmp:
        moved = replace(t, submit=np.where(flagged, t.recorded_start, t.submit))
        p = Path(tmp) / "held.swf"
        write_swf(moved, p)
        alt = replay(p)
    sub = pd.Series(t.submit, index=t.job_id)
    rec = pd.Series(t.recorded_start - t.submit, index=t.job_id)
    keep = ~np.isin(t.job_id, ids)
    for name, df in (("shipped", base), ("held jobs eligible at their recorded start", alt)):
        w = (df["start"] - sub.reindex(df.index)).reindex(t.job_id).to_numpy()
        r = rec.to_numpy()
        a, b = fidelity(w, r), fidelity(w[keep], r[keep])
        print(f"  {name}: all jobs mean x{a.sim_mean_h / a.rec_mean_h:.2f} KS {a.ks:.3f} Spearman "
              f"{a.spearman:.3f}; jobs not flagged ({keep.sum()}): mean {b.sim_mean_h:.2f} / "
              f"{b.rec_mean_h:.2f} h (x{b.sim_mean_h / b.rec_mean_h:.2f}) KS {b.ks:.3f} Spearman "
              f"{b.spearman:.3f}", flush=True)
