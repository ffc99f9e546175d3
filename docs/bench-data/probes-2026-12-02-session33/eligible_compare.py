"""Jobs released by a dependency: the whole second each became eligible in the replay,
against the one Slurm recorded (sacct's Eligible, the job's begin time), over every saved
real run with a full slurmctld log (the ``replay`` timing). Compared where the replay ends
the dependency within 10 ms of the log's ``_job_complete`` line (else the schedules differ
before the release, and so does the second). Also printed: the seconds from the dependency's
recorded End to the Eligible, for the replay and Slurm (sacct's End can be the second
before the log's line: a completion processed across a second's turn); and how many of a
run's jobs the replay ends within 1 ms of the log's line. Arguments: the runs' names
(``fairshare1000_qos_seed167``); none, every saved run."""

import json
import math
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, "bench")
from sim_fidelity import workload  # noqa: E402

from hpcbase.slurm.ctldlog import read_events  # noqa: E402
from sim import realcheck as rc  # noqa: E402
from sim.realslurm import as_job  # noqa: E402

DATA = Path("docs/bench-data")
same = total = 0
tmp = Path(tempfile.mkdtemp())
names = sys.argv[1:]
paths = [DATA / f"sim_fidelity_real_{n}.json" for n in names] or sorted(
    DATA.glob("sim_fidelity_real_*.json")
)
for path in paths:
    saved = json.loads(path.read_text())
    if "jobs" in saved:
        jobs = [as_job(j, i) for i, j in enumerate(saved["jobs"])]
    else:
        jobs = workload(saved.get("seed", 7), bool(saved.get("users")))
    rows = saved["real"]
    conf = tmp / "slurm.conf"
    conf.write_text(saved["slurm_conf"])
    timing = rc.replay(rc.run_timing(path, saved, rows, jobs, rc.SlurmConfig.from_file(conf)))
    if not timing.latencies:
        continue  # no full log: no replay timing
    t0, views = rc.replayed_jobs(jobs, rows, conf, timing, qos=saved.get("qos"))
    log = path.with_name(path.stem + ".ctld.log.gz")
    by = {r["name"]: r for r in rows}
    name = {r["job_id"]: r["name"] for r in rows}
    log_end = {name[j]: w - t0 for w, j in read_events(log)["end"] if j in name}
    out = []
    for job in jobs:
        if not job.dependency or by[job.name].get("eligible") is None:
            continue
        targets = re.findall(r":([\w.-]+)", job.dependency)
        if any(abs(views[t].end - log_end.get(t, math.inf)) > 0.01 for t in targets):
            out.append(f"{job.name} (schedules differ)")
            continue
        real = by[job.name]["eligible"]
        sim = math.floor(views[job.name].eligible) + t0
        real_end = max(by[t]["end"] for t in targets)
        total += 1
        same += sim == real
        mark = "" if sim == real else " MISSED"
        out.append(f"{job.name} {sim - real_end:+.0f}/{real - real_end:+.0f}{mark}")
    exact = sum(abs(views[n].end - w) < 1e-3 for n, w in log_end.items())
    out.append(f"ends within 1 ms of the log: {exact} of {len(log_end)}")
    print(f"{path.stem[len('sim_fidelity_real_') :]:<32} {', '.join(out)}")
print("(per job: seconds from its dependency's recorded End to its Eligible, replay/Slurm)")
print(f"released jobs whose Eligible second is Slurm's: {same} of {total}")
