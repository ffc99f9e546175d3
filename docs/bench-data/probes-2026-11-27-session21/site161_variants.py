"""Site 161: the inferred priority's parts swapped one at a time for the true ones
(each replay with --slurm-conf: the depth and priority lines given, the rest inferred)."""

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

BASE = [
    "AccountingStorageType=accounting_storage/slurmdbd",
    "PriorityType=priority/multifactor",
    "SchedulerParameters=bf_max_job_test=50",
]
TRUE = dict(PriorityWeightFairshare=90295, PriorityWeightAge=4721, PriorityWeightJobSize=27464,
            PriorityMaxAge="168:00:00", PriorityDecayHalfLife="22:00:00")
FOUND = dict(PriorityWeightFairshare=100000, PriorityWeightAge=6388, PriorityWeightJobSize=26840,
             PriorityMaxAge="229:00:00", PriorityDecayHalfLife="22:00:00")
VARIANTS = {
    "true": TRUE,
    "found": FOUND,
    "found, true MaxAge": {**FOUND, "PriorityMaxAge": "168:00:00"},
    "true, found MaxAge": {**TRUE, "PriorityMaxAge": "229:00:00"},
    "found, true age weight ratio": {**FOUND, "PriorityWeightAge": 5228},
    "found, true size ratio": {**FOUND, "PriorityWeightJobSize": 30416},
}

site, rng = us.draw(161, grid=False)
trace = us.record(site, rng, 8000)
rec = trace.recorded_start - trace.submit
with tempfile.TemporaryDirectory() as tmp:
    log = Path(tmp) / "site161.swf"
    write_swf(trace, log)
    for name, kv in VARIANTS.items():
        conf = Path(tmp) / "v.conf"
        conf.write_text("\n".join(BASE + [f"{k}={v}" for k, v in kv.items()]) + "\n")
        out = Path(tmp) / "out.csv"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            replay_main([str(log), "--out", str(out), "--no-progress", "--slurm-conf", str(conf)])
        with out.open() as f:
            sim = np.array([float(r["wait"]) if r["wait"] not in ("", "nan") else np.nan
                            for r in csv.DictReader(f)])
        fi = fidelity(sim, rec)
        print(f"{name}: mean x{fi.sim_mean_h / fi.rec_mean_h:.2f}, median {fi.sim_median_h:.1f} / "
              f"{fi.rec_median_h:.1f} h, KS {fi.ks:.3f}, Spearman {fi.spearman:.3f}", flush=True)
