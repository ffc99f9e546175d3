"""Every saved real run re-simulated with and without ages counted in whole seconds
(session 32): ``PriorityModel.whole_age`` set as the Simulator sets it under BackfillCycle,
and switched off (ages to the instant, as before this session).

    PYTHONPATH=. .venv/bin/python docs/bench-data/probes-2026-12-01-session32/whole_age_ablation.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import sim.realcheck as rc
from bench.sim_fidelity import saved_seed, workload
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.realslurm import as_job

DATA = Path(__file__).resolve().parents[1]


def no_whole_age(*args, **kwargs) -> Simulator:
    s = Simulator(*args, **kwargs)
    s.prio.whole_age = None
    return s


def figures(path: Path, off: bool) -> rc.Figures:
    saved = json.loads(path.read_text())
    conf = Path("/tmp/whole_age_ablation.conf")
    conf.write_text(saved["slurm_conf"])
    rows = saved["real"]
    if "jobs" in saved:
        jobs = [as_job(j, i) for i, j in enumerate(saved["jobs"])]
    else:  # an older run: its workload from its seed, as the benchmark does
        jobs = workload(saved_seed(path, saved), users=bool(saved.get("users", saved.get("qos"))))
    timing = rc.replay(rc.run_timing(path, saved, rows, jobs, SlurmConfig.from_file(conf)))
    rc.Simulator = no_whole_age if off else Simulator  # type: ignore[misc]
    try:
        starts = rc.simulate(jobs, rows, conf, timing, qos=saved.get("qos"))
    finally:
        rc.Simulator = Simulator  # type: ignore[misc]
    return rc.compare(rows, starts, table=False)


def main() -> int:
    met = {False: 0, True: 0}
    paths = sorted(DATA.glob("sim_fidelity_real_*.json"))
    print(f"{'run':<34} {'whole-second ages':>22} {'ages to the instant':>22}")
    for path in paths:
        cells = []
        for off in (False, True):
            f = figures(path, off)
            met[off] += f.met
            cells.append(
                f"{100 * f.same:5.1f}% {f.median:4.1f} s {f.max:5.0f} s {'met' if f.met else 'MISS'}"
            )
        flag = "" if cells[0][-4:] == cells[1][-4:] else "  <- differs"
        print(
            f"{path.stem.removeprefix('sim_fidelity_real_'):<34} {cells[0]:>22} {cells[1]:>22}{flag}"
        )
    print(
        f"met: whole-second ages {met[False]} of {len(paths)}, to the instant {met[True]} of {len(paths)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
