"""Real Slurm runs saved by ``bench/sim_fidelity.py --save`` (``docs/bench-data``), read
back as the replay tests need them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sim.config import SlurmConfig
from sim.realcheck import Figures, Timing, compare, run_timing, simulate
from sim.realslurm import WorkloadJob, as_job

DATA = Path(__file__).resolve().parents[2] / "docs/bench-data"


@dataclass
class SavedRun:
    """One saved run: its rows, its workload and its slurm.conf written out (``conf``)."""

    path: Path
    saved: dict
    conf: Path
    rows: list[dict]
    jobs: list[WorkloadJob]

    @property
    def cfg(self) -> SlurmConfig:
        return SlurmConfig.from_file(self.conf)

    def timing(self) -> Timing:
        """The timing measured from the log kept beside the run (else the default)."""
        return run_timing(self.path, self.saved, self.rows, self.jobs, self.cfg)

    def figures(self, timing: Timing | None) -> Figures:
        """The replay under ``timing`` against the real starts."""
        starts = simulate(self.jobs, self.rows, self.conf, timing, qos=self.saved.get("qos"))
        return compare(self.rows, starts, table=False)


def load(name: str, tmp_path: Path, extra: str = "") -> SavedRun:
    """``docs/bench-data/NAME.json``, its slurm.conf (plus ``extra`` lines) in ``tmp_path``."""
    path = DATA / f"{name}.json"
    saved = json.loads(path.read_text())
    tmp_path.mkdir(parents=True, exist_ok=True)
    conf = tmp_path / f"{name}.conf"
    conf.write_text(saved["slurm_conf"] + extra)
    jobs = [as_job(j, i) for i, j in enumerate(saved["jobs"])]
    return SavedRun(path, saved, conf, saved["real"], jobs)
