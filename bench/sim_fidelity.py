"""Simulator fidelity against real Slurm 22.05.

One workload (48 short sleep jobs of mixed sizes and limits, a dependency chain, a
whole-node job that opens backfill holes) runs on the local real Slurm cluster
(scripts/slurm-cluster.sh, 16 CPUs, CR_CPU) and then through the simulator configured from
the very same slurm.conf. Each simulated job is submitted at the second real Slurm recorded
for it and runs as long as it really ran; everything else (when it starts) is the
simulator's own decision. Prints per-job start differences.

    .venv/bin/python bench/sim_fidelity.py [--seed 7] [--save rows.json] [--ctld-log ctld.log]
    .venv/bin/python bench/sim_fidelity.py --load docs/bench-data/sim_fidelity_real_run1.json

``--seed`` draws another workload of the same shape (seed 7 is the benchmark's; others are
held-out checks); ``--load`` re-simulates saved real rows without Slurm; ``--ctld-log`` keeps
slurmctld's log with backfill debugging on (what the backfill planned, pass by pass).

Targets (issue 2): the same start order for at least 90% of jobs, median start difference
at most 2 s. "Same order" per job: its place in the start order (how many jobs started
before it, starts within 1 s counting as simultaneous) is the same in both runs, within one
place. The share of job pairs ordered alike is printed too.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
from bisect import bisect_left
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout: tests.fixtures (one module, as in the tests)

from hpcbase.jobs import JobSpec  # noqa: E402
from sim.config import SlurmConfig  # noqa: E402
from sim.engine import Simulator  # noqa: E402
from tests.fixtures.realslurm import WorkloadJob, run_workload  # noqa: E402

CPUS = 16
SCHED = """\
SchedulerParameters=bf_interval=1,bf_resolution=1,sched_interval=10,bf_max_job_test=500
PriorityWeightAge=1000
PriorityWeightJobSize=1000
PriorityMaxAge=00:10:00
PriorityCalcPeriod=1
"""
# With --ctld-log: what the backfill scheduler planned, and why (the log grows to a few MB).
DEBUG = """\
SlurmctldDebug=debug2
DebugFlags=Backfill,BackfillMap
"""


def workload(seed: int) -> list[WorkloadJob]:
    """48 jobs: a burst that fills the node, a whole-node job that must wait (its
    reservation leaves holes for short jobs), a dependency chain, and a steady trickle.
    Submissions fall on whole seconds: Slurm records times to the second, so sub-second
    offsets would make the order of simultaneous events ambiguous for the replay."""
    rng = random.Random(seed)
    jobs: list[WorkloadJob] = []
    for i in range(10):  # the opening burst
        cpus = rng.choice([2, 4, 4, 8])
        sleep = rng.randint(20, 60)
        jobs.append(WorkloadJob(f"burst{i}", cpus, 60 * rng.choice([2, 3]), sleep, i // 2))
    jobs.append(WorkloadJob("wide", CPUS, 120, 30, 6))
    jobs.append(WorkloadJob("chain1", 2, 60, 15, 8))
    jobs.append(WorkloadJob("chain2", 2, 60, 15, 9, "afterok:chain1"))
    jobs.append(WorkloadJob("chain3", 4, 60, 10, 10, "afterany:chain2"))
    for i in range(34):  # short fillers, some of which fit in the holes
        cpus = rng.choice([1, 1, 2, 2, 4, 6, 8, 12])
        sleep = rng.randint(5, 40)
        limit = 60 * (1 + sleep // 50 + rng.choice([0, 0, 1, 2]))
        jobs.append(WorkloadJob(f"f{i}", cpus, limit, sleep, 12 + round(i * rng.uniform(2, 5))))
    return jobs


def simulate(jobs: list[WorkloadJob], rows: list[dict], conf: Path) -> dict[str, float]:
    """Replay the jobs as real Slurm received them; returns simulated start per name."""
    cfg = SlurmConfig.from_file(conf)
    t0 = min(r["submit"] for r in rows)
    sim = Simulator(None, cfg, epoch=t0)
    by_name = {r["name"]: r for r in rows}
    ids: dict[str, int] = {}
    order = sorted(jobs, key=lambda j: (by_name[j.name]["submit"], by_name[j.name]["job_id"]))
    prev = 0.0
    for job in order:
        row = by_name[job.name]
        # Jobs of one second arrive together, before that second's scheduler passes:
        # advance only to the previous submission second and queue these at their own.
        at = row["submit"] - t0
        if at > prev:
            sim.advance(prev)
            prev = at
        dep = job.dependency or ""
        if any(by_name[n]["submit"] - t0 == at for n in re.findall(r":([\w.-]+)", dep)):
            sim.advance(at)  # its dependency must have arrived: a rare same-second chain
        for name, jid in ids.items():
            dep = dep.replace(f":{name}", f":{jid}")
        ran = (row["end"] - row["start"]) if row["start"] is not None else 0.0
        ids[job.name] = sim.submit(
            JobSpec(
                units=row["cpus"],
                limit=row["limit_s"],
                runtime=ran,
                submit=at,
                name=job.name,
                dependency=dep,
                partition=job.partition,
            )
        )
    sim.run()
    return {name: sim.job(jid).start + t0 for name, jid in ids.items()}


TIE_S = 1.0  # Slurm records times to the second: closer starts count as simultaneous


def positions(values: dict[str, float]) -> dict[str, int]:
    """A job's place in the start order: how many jobs started before it (by more than
    ``TIE_S``)."""
    ordered = sorted(values.values())
    return {k: bisect_left(ordered, v - TIE_S) for k, v in values.items()}


def pair_agreement(a: dict[str, float], b: dict[str, float]) -> float:
    """Share of job pairs that the two runs put in the same order (ties within ``TIE_S``)."""
    keys = list(a)
    same = total = 0
    for i, x in enumerate(keys):
        for y in keys[i + 1 :]:
            da, db = a[x] - a[y], b[x] - b[y]
            oa = 0 if abs(da) <= TIE_S else (1 if da > 0 else -1)
            ob = 0 if abs(db) <= TIE_S else (1 if db > 0 else -1)
            same += oa == ob
            total += 1
    return same / total if total else 1.0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--save", type=Path, help="write the real and simulated rows as JSON")
    ap.add_argument("--load", type=Path, help="reuse real-Slurm rows saved by --save")
    ap.add_argument(
        "--ctld-log",
        type=Path,
        help="keep the slurmctld log of the real run here, with backfill debug logging on",
    )
    args = ap.parse_args()
    jobs = workload(args.seed)
    with tempfile.TemporaryDirectory() as d:
        extra = Path(d) / "sched.conf"
        extra.write_text(SCHED + (DEBUG if args.ctld_log else ""))
        conf = Path(d) / "slurm.conf"
        if args.load:
            saved = json.loads(args.load.read_text())
            rows = saved["real"]
            conf.write_text(saved["slurm_conf"])
        else:
            rows = run_workload(jobs, extra, CPUS, conf_out=conf, log_out=args.ctld_log)
        sim_start = simulate(jobs, rows, conf)
        conf_text = conf.read_text()
    real_start = {r["name"]: float(r["start"]) for r in rows if r["start"] is not None}
    sim_start = {k: v for k, v in sim_start.items() if k in real_start}
    rr, rs = positions(real_start), positions(sim_start)
    t0 = min(r["submit"] for r in rows)
    diffs = {k: sim_start[k] - real_start[k] for k in real_start}
    same = [k for k in real_start if abs(rr[k] - rs[k]) <= 1]
    print(
        f"{'job':<8} {'cpus':>4} {'limit':>5} {'real start':>10} {'sim start':>10} "
        f"{'diff s':>7} {'place r/s':>9}"
    )
    for k in sorted(real_start, key=lambda k: (real_start[k], k)):
        r = next(x for x in rows if x["name"] == k)
        print(
            f"{k:<8} {r['cpus']:>4} {r['limit_s']:>5.0f} {real_start[k] - t0:>10.0f} "
            f"{sim_start[k] - t0:>10.1f} {diffs[k]:>7.1f} {rr[k]:>4}/{rs[k]:<4}"
        )
    abs_d = [abs(v) for v in diffs.values()]
    med = statistics.median(abs_d)
    share = len(same) / len(real_start)
    pairs = pair_agreement(real_start, sim_start)
    print(
        f"\n{len(real_start)} jobs; same place in the start order (within one): "
        f"{100 * share:.1f}%; "
        f"job pairs in the same order: {100 * pairs:.1f}%; median |start difference| {med:.1f} s; "
        f"p90 {sorted(abs_d)[int(0.9 * len(abs_d)) - 1]:.1f} s; max {max(abs_d):.1f} s"
    )
    if args.save:
        args.save.write_text(
            json.dumps({"real": rows, "sim_start": sim_start, "slurm_conf": conf_text}, indent=1)
        )
    ok = share >= 0.9 and med <= 2.0
    print(
        f"RESULT jobs={len(real_start)} same_order_pct={100 * share:.1f} "
        f"pair_order_pct={100 * pairs:.1f} "
        f"median_abs_diff_s={med:.2f} "
        f"max_abs_diff_s={max(abs_d):.1f} target={'met' if ok else 'missed'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
