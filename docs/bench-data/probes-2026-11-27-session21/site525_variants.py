"""Held-out site 525 (x0.65 by default, x1.01 with its true priority and depth): the
inferred depth and weights swapped one at a time (each replay with --slurm-conf)."""

from __future__ import annotations

import contextlib
import csv
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

import unseen_sites as us  # noqa: E402
from sim.fidelity import fidelity  # noqa: E402
from sim.replay_cli import main as replay_main  # noqa: E402
from sim.traces import write_swf  # noqa: E402

BASE = ["AccountingStorageType=accounting_storage/slurmdbd", "PriorityType=priority/multifactor"]
TRUE = dict(PriorityWeightFairshare=95313, PriorityWeightAge=1363, PriorityWeightJobSize=2984,
            PriorityMaxAge="48:00:00", PriorityDecayHalfLife="58:00:00")
FOUND = dict(PriorityWeightFairshare=100000, PriorityWeightAge=282, PriorityWeightJobSize=3660,
             PriorityMaxAge="205:00:00", PriorityDecayHalfLife="59:00:00")
VARIANTS = {
    "true, depth 50": (TRUE, 50),
    "true, depth 66": (TRUE, 66),
    "found, depth 66": (FOUND, 66),
    "found, depth 50": (FOUND, 50),
}

site, rng = us.draw(525, grid=False)
trace = us.record(site, rng, 8000)
rec = trace.recorded_start - trace.submit
with tempfile.TemporaryDirectory() as tmp:
    log = Path(tmp) / "site525.swf"
    write_swf(trace, log)
    for name, (kv, depth) in VARIANTS.items():
        conf = Path(tmp) / "v.conf"
        lines = BASE + [f"SchedulerParameters=bf_max_job_test={depth}"]
        conf.write_text("\n".join(lines + [f"{k}={v}" for k, v in kv.items()]) + "\n")
        out = Path(tmp) / "out.csv"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            replay_main([str(log), "--out", str(out), "--no-progress", "--slurm-conf", str(conf)])
        with out.open() as f:
            sim = np.array([float(r["wait"]) if r["wait"] not in ("", "nan") else np.nan
                            for r in csv.DictReader(f)])
        fi = fidelity(sim, rec)
        print(f"{name}: mean x{fi.sim_mean_h / fi.rec_mean_h:.2f}, median {fi.sim_median_h:.1f} / "
              f"{fi.rec_median_h:.1f} h, KS {fi.ks:.3f}, Spearman {fi.spearman:.3f}", flush=True)
