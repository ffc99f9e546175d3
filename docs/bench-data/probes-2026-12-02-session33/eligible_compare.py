"""Jobs released by a dependency: how many whole seconds after its dependency's end each
became eligible, in the replay against Slurm's record (sacct's Eligible, the job's
begin_time; End), over every saved real run with a full slurmctld log (the ``replay``
timing). Counted apart from the end itself, which moves with the schedule."""

import json
import math
import re
import sys
import tempfile
from pathlib import Path

from sim import realcheck as rc
from sim.realslurm import as_job

DATA = Path("docs/bench-data")
same = total = 0
tmp = Path(tempfile.mkdtemp())
for path in sorted(DATA.glob("sim_fidelity_real_*.json")):
    saved = json.loads(path.read_text())
    if "jobs" not in saved:
        continue  # a run saved before the workload was
    jobs = [as_job(j, i) for i, j in enumerate(saved["jobs"])]
    rows = saved["real"]
    conf = tmp / "slurm.conf"
    conf.write_text(saved["slurm_conf"])
    timing = rc.replay(rc.run_timing(path, saved, rows, jobs, rc.SlurmConfig.from_file(conf)))
    if not timing.latencies:
        continue  # no full log: no replay timing
    t0, views = rc.replayed_jobs(jobs, rows, conf, timing, qos=saved.get("qos"))
    dep = {j.name for j in jobs if j.dependency}
    by = {r["name"]: r for r in rows}
    out = []
    for name in sorted(dep):
        target = re.findall(r":([\w.-]+)", next(j.dependency for j in jobs if j.name == name))
        real_end = max(by[t]["end"] for t in target)
        real = by[name].get("eligible")
        end = max(math.floor(views[t].end) for t in target) + t0
        if real is None or math.isnan(views[name].eligible):
            continue
        sim = math.floor(views[name].eligible) + t0
        total += 1
        same += sim - end == real - real_end
        out.append(f"{name} {sim - end:+.0f}/{real - real_end:+.0f}")
    print(f"{path.stem[len('sim_fidelity_real_') :]:<36} {', '.join(out) or '-'}")
print("(per job: seconds from its dependency's end to its eligible time, replay/Slurm)")
print(f"dependency-released jobs with Slurm's delay: {same} of {total}")
sys.exit(0)
