"""The flag-free replay's mean ratio, KS and Spearman on the real logs at hand, for a few
default availability windows, with the priority where no depth shows (session 22).
    python window_typical.py LOG... (no LOG: the embedded slice)"""
import contextlib
import csv
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

import sim.replay_cli as rc  # noqa: E402
from sim.fidelity import fidelity  # noqa: E402

logs = sys.argv[1:] or [""]
for log in logs:
    for hours in (1, 2, 3, 6):
        rc.DEFAULT_WINDOW_S = hours * 3600.0
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "o.csv"
            args = ([log] if log else []) + ["--no-profile", "--no-progress", "--out", str(out)]
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                rc.main(args)
            with out.open() as f:
                rows = list(csv.DictReader(f))
        sim = np.array([float(r["wait"]) if r["wait"] not in ("", "nan") else np.nan for r in rows])
        rec = np.array([float(r["recorded_wait"]) if r["recorded_wait"] not in ("", "nan") else np.nan for r in rows])
        fi = fidelity(sim, rec)
        print(f"{Path(log).name or 'embedded slice'} window {hours} h: mean {fi.sim_mean_h:.2f} / {fi.rec_mean_h:.2f} h "
              f"(x{fi.sim_mean_h / fi.rec_mean_h:.2f}), KS {fi.ks:.3f}, Spearman {fi.spearman:.3f}", flush=True)
