"""A held-out miss of bench/unseen_sites.py: its default replay against one with the true
priority and depth (--slurm-conf, everything else as inferred).
    python site_truth.py SEED [grid]"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

import unseen_sites as us  # noqa: E402
from sim.fidelity import fidelity  # noqa: E402
from sim.traces import write_swf  # noqa: E402

SEED = int(sys.argv[1])
GRID = len(sys.argv) > 2 and sys.argv[2] == "grid"
site, rng = us.draw(SEED, grid=GRID)
trace = us.record(site, rng, 8000)
rec = trace.recorded_start - trace.submit
print(site.describe())
with tempfile.TemporaryDirectory() as tmp:
    log = Path(tmp) / f"site{SEED}.swf"
    write_swf(trace, log)
    conf = Path(tmp) / "true.conf"
    lines = [f"SchedulerParameters=bf_max_job_test={site.depth}", *site.lines]
    conf.write_text("\n".join(lines) + "\n")
    runs = {"default": [], "true priority + depth": ["--slurm-conf", str(conf)]}
    for name, extra in runs.items():
        out = Path(tmp) / "out.csv"
        from sim.replay_cli import main as replay_main
        import contextlib, io, csv
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            replay_main([str(log), "--out", str(out), "--no-progress", *extra])
        with out.open() as f:
            sim = np.array([float(r["wait"]) if r["wait"] not in ("", "nan") else np.nan
                            for r in csv.DictReader(f)])
        fi = fidelity(sim, rec)
        print(f"{name}: mean {fi.sim_mean_h:.1f} / {fi.rec_mean_h:.1f} h "
              f"(x{fi.sim_mean_h / fi.rec_mean_h:.2f}), median {fi.sim_median_h:.1f} / "
              f"{fi.rec_median_h:.1f}, p90 {fi.sim_p90_h:.1f} / {fi.rec_p90_h:.1f}, "
              f"KS {fi.ks:.3f}, Spearman {fi.spearman:.3f}")
        for line in err.getvalue().splitlines():
            if line.startswith("note"):
                print("   ", line[:230])
