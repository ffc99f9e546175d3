"""Each user's fair-share factor at each run of slurmctld's decay thread: real Slurm's
(``Fairshare priority of job N for user U ... is F`` lines of a ``DebugFlags=Priority``
log) against the simulator's (its usage folded at the same instant, the run replayed as
bench/sim_fidelity.py replays it; the simulator refreshes priorities only when a pass could
start something, so its jobs' stored priorities are not compared).
Usage: PYTHONPATH=. priority_compare.py SAVED.json FULL_CTLD.log[.gz] [--classic] [--no-assoc]"""

from __future__ import annotations

import gzip
import json
import re
import sys
from datetime import datetime
from pathlib import Path

import sim.realcheck as rc
from bench.sim_fidelity import workload
from sim.config import SlurmConfig
from sim.engine import Simulator

saved_path, log_path = Path(sys.argv[1]), Path(sys.argv[2])
classic = "--classic" in sys.argv
saved = json.loads(saved_path.read_text())
rows = saved["real"]
jobs = workload(saved["seed"], users=True)
t0 = min(r["submit"] for r in rows)
names = sorted({j.user for j in jobs})
opener = gzip.open if log_path.suffix == ".gz" else open
line = re.compile(r"^\[([\d\-T:.]+)\].*Fairshare priority of job \d+ for user (\w+) .* is ([\d.]+)")
real: dict[float, dict[str, float]] = {}
with opener(log_path, "rt") as f:
    for text in f:
        m = line.match(text)
        if m:
            at = datetime.fromisoformat(m.group(1)).timestamp() - t0
            real.setdefault(round(at, 2), {})[m.group(2)] = float(m.group(3))
conf = Path("/tmp/slurm-probe.conf")
conf.write_text(saved["slurm_conf"] + ("PriorityFlags=NO_FAIR_TREE\n" if classic else ""))
cfg = SlurmConfig.from_file(conf)
timing = rc.replay(rc.run_timing(saved_path, saved, rows, jobs, cfg))
# the decay thread's runs (its phase measured from the log); the factors logged at other
# instants are those of arrivals, computed from the last run's fold
phase, period = timing.calc_phase, cfg.calc_period
runs = sorted(at for at in real if abs((at - phase + 1) % period - 1) < 0.05)
seen: dict[float, dict[str, float]] = {}


class Probe(Simulator):
    def _through(self, until: float) -> None:
        for at in runs:
            if self.state.now < at + 0.001 <= until:
                super().advance(at + 0.001)
                fs = self.prio.fairshare.copy()
                fs.tick(at, len(names))
                seen[at] = {u: fs.factor(k) for k, u in enumerate(names)}

    def __init__(self, *a, **kw) -> None:  # type: ignore[no-untyped-def]
        if "--no-assoc" in sys.argv:
            kw["associations"] = 0
        super().__init__(*a, **kw)

    def advance(self, until: float) -> None:
        self._through(until)
        super().advance(until)

    def run(self, **kw):  # type: ignore[override]
        self._through(max(runs) + 1)
        return super().run(**kw)


rc.Simulator = Probe  # type: ignore[misc]
rc.simulate(jobs, rows, conf, timing)
label = "classic" if classic else "Fair Tree"
label += ", no associations" if "--no-assoc" in sys.argv else ""
print(f"{saved_path.name}, simulator {label}: factor per user at each decay run, real / sim")
same = total = 0
for at in runs:
    cells = []
    for u in names:
        r, s = real[at].get(u), seen.get(at, {}).get(u)
        if r is None or s is None:
            cells.append(f"{u} -")
            continue
        total += 1
        same += abs(r - s) < 5e-4
        cells.append(f"{u} {r:.3f}/{s:.3f}")
    print(f"  t={at:7.2f}  " + "  ".join(cells))
print(f"RESULT factors_equal={same}/{total}")
