"""Every priority slurmctld logged at a decay run (``_get_priority_internal: Job N
priority: ... = P`` with ``DebugFlags=Priority``), against the simulator's for the same job
at the same decay run, in the cycle replay of each fair-share-with-limit run recorded this
session; ages counted in whole seconds (as the Simulator does under BackfillCycle since
session 32) and to the instant (before).

    PYTHONPATH=. .venv/bin/python docs/bench-data/probes-2026-12-01-session32/age_compare.py
"""

from __future__ import annotations

import gzip
import json
import math
import re
import sys
from pathlib import Path

import sim.job_scheduler as js
import sim.realcheck as rc
from hpcbase.slurm.ctldlog import unix_time
from sim import _backfill
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.realslurm import as_job

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
RUNS = (
    "seed7_run2", "seed59", "seed61", "seed71", "seed47_run2", "seed73", "seed137", "seed139",
    "seed149", "seed151", "seed157", "seed163",
)  # fmt: skip
LINE = re.compile(r"\[(\S+)\] .*_get_priority_internal: Job (\d+) priority: .* = ([\d.]+)")
DECAY = re.compile(r"\[(\S+)\] .*Fair Tree fairshare algorithm, starting at root")


class Recorder:
    """``_backfill`` with ``refresh`` recording every job's priority after each call."""

    def __init__(self, t0: float) -> None:
        self.t0, self.seen = t0, {}

    def __getattr__(self, name: str):
        return getattr(_backfill, name)

    def refresh(self, order, tick, *args):
        changed = _backfill.refresh(order, tick, *args)
        for job in order:
            self.seen[(math.floor(tick + self.t0), job.name)] = job.prio
        return changed


def compare(run: str, whole: bool) -> tuple[int, int, list[str]]:
    path = DATA / f"sim_fidelity_real_fairshare1000_qos_{run}.json"
    saved = json.loads(path.read_text())
    conf = Path("/tmp/age_compare.conf")
    conf.write_text(saved["slurm_conf"])
    rows = saved["real"]
    jobs = [as_job(j, i) for i, j in enumerate(saved["jobs"])]
    timing = rc.replay(rc.run_timing(path, saved, rows, jobs, SlurmConfig.from_file(conf)))
    t0 = min(r["submit"] for r in rows)
    rec = Recorder(t0)

    def made(*args, **kwargs) -> Simulator:
        s = Simulator(*args, **kwargs)
        if not whole:
            s.prio.whole_age = None
        return s

    rc.Simulator, js._backfill = made, rec  # type: ignore[misc,assignment]
    try:
        rc.simulate(jobs, rows, conf, timing, qos=saved.get("qos"))
    finally:
        rc.Simulator, js._backfill = Simulator, _backfill  # type: ignore[misc]
    name = {r["job_id"]: r["name"] for r in rows}
    log = HERE / f"fairshare1000_qos_{run}.priority.log.gz"
    decay: set[int] = set()
    same = total = 0
    off: list[str] = []
    with gzip.open(log, "rt") as f:
        for line in f:
            m = DECAY.match(line)
            if m:
                decay.add(math.floor(unix_time(m.group(1))))
                continue
            m = LINE.match(line)
            if not m:
                continue
            sec = math.floor(unix_time(m.group(1)))
            if sec not in decay:  # a submission's initial priority
                continue
            key = (sec, name[int(m.group(2))])
            if key not in rec.seen:  # the simulator had the job running or not queued then
                continue
            total += 1
            slurm = int(float(m.group(3)))
            if rec.seen[key] == slurm:
                same += 1
            else:
                off.append(f"{key[1]} at t={sec - t0:.0f}: Slurm {slurm}, sim {rec.seen[key]}")
    return same, total, off


def main() -> int:
    print(f"{'run':<14} {'whole-second ages':>18} {'to the instant':>16}")
    for run in RUNS:
        cells, offs = [], []
        for whole in (True, False):
            same, total, off = compare(run, whole)
            cells.append(f"{same}/{total}")
            offs.append(off)
        print(f"{run:<14} {cells[0]:>18} {cells[1]:>16}")
        for label, off in zip(("whole", "instant"), offs, strict=True):
            for o in off[:6]:
                print(f"    {label}: {o}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
