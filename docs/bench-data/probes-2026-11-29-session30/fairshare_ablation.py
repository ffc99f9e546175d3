"""Each saved fair-share run (bench/sim_fidelity.py --fairshare) re-simulated with the
session-30 model, and with one part of it taken away at a time: the decay thread's phase
(ticks at multiples of PriorityCalcPeriod from the first submission), the fold at every
decay run, the per-job epilogs, and Fair Tree (classic fair share instead).

    PYTHONPATH=. .venv/bin/python docs/bench-data/probes-2026-11-29-session30/fairshare_ablation.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from sim import engine
from sim.config import SlurmConfig
from sim.realcheck import compare, replay, run_timing, simulate
from sim.realslurm import as_job

DATA = Path(__file__).resolve().parents[3]


def figures(path: Path, variant: str) -> str:
    saved = json.loads(path.read_text())
    rows = saved["real"]
    jobs = [as_job(j, i) for i, j in enumerate(saved["jobs"])]
    text = saved["slurm_conf"] + ("PriorityFlags=NO_FAIR_TREE\n" if variant == "classic" else "")
    with tempfile.TemporaryDirectory() as d:
        conf = Path(d) / "slurm.conf"
        conf.write_text(text)
        timing = replay(run_timing(path, saved, rows, jobs, SlurmConfig.from_file(conf)))
        if variant == "no phase":
            timing = replace(timing, calc_phase=0.0)
        if variant == "no epilogs":
            timing = replace(timing, epilogs={})
        lazy = variant == "lazy fold"
        init = engine.Simulator.__init__

        def patched(self, *a, **k):  # type: ignore[no-untyped-def]
            init(self, *a, **k)
            if lazy:
                self.prio.fairshare.decay_runs = None

        engine.Simulator.__init__ = patched  # type: ignore[method-assign]
        try:
            f = compare(rows, simulate(jobs, rows, conf, timing), table=False)
        finally:
            engine.Simulator.__init__ = init  # type: ignore[method-assign]
    return f"{100 * f.same:5.1f} % / {f.median:4.1f} s / max {f.max:5.1f} s {'met' if f.met else 'missed'}"


def main() -> int:
    paths = sorted((DATA / "docs/bench-data").glob("sim_fidelity_real_fairshare_seed*.json"))
    variants = ("model", "no phase", "lazy fold", "no epilogs", "classic")
    print("run".ljust(22) + "".join(v.ljust(40) for v in variants))
    for path in paths:
        line = path.stem.removeprefix("sim_fidelity_real_").ljust(22)
        print(line + "".join(figures(path, v).ljust(40) for v in variants), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
