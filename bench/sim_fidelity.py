"""Simulator fidelity against real Slurm 22.05.

One workload (48 short sleep jobs of mixed sizes and limits, a dependency chain, a
whole-node job that opens backfill holes) runs on the local real Slurm cluster
(scripts/slurm-cluster.sh, 16 CPUs, CR_CPU) and then through the simulator configured from
the very same slurm.conf. Each simulated job is submitted at the second real Slurm recorded
for it and runs as long as it really ran; everything else (when it starts) is the
simulator's own decision. Prints per-job start differences.

    .venv/bin/python bench/sim_fidelity.py [--seed 7] [--save rows.json] [--ctld-log ctld.log]
    .venv/bin/python bench/sim_fidelity.py --load docs/bench-data/sim_fidelity_real_run1.json
    .venv/bin/python bench/sim_fidelity.py --load docs/bench-data/sim_fidelity_real_*.json

``--seed`` draws another workload of the same shape (seed 7 is the benchmark's; others are
held-out checks); ``--load`` re-simulates saved real rows without Slurm (several files: one
line per run, then a RESULT line over all; a file's seed is the one it was saved with, else
the ``seedN`` in its name, else 7); ``--ctld-log`` keeps slurmctld's log with backfill
debugging on (what the backfill planned, pass by pass) and saves the run's measured
sub-second timing with the rows.

``--timing``: ``aligned`` is the simulator's default timing (backfill passes on whole
seconds, a job end processed in the second its run ends, seen by the backfill pass one
second later); ``cycle`` replays with ``sim.engine.BackfillCycle``: the
backfill loop free-running (``bf_interval`` plus each pass's run time), each job running its
sleep and its end reaching slurmctld ``end_latency`` later, submissions at their sub-second
times, and no start for ``completing`` (0.94 s) after an end that reaches slurmctld within
``completing_window`` (30 ms) after a backfill pass began. A run saved with ``--ctld-log``
carries its own measured timing (first backfill wake-up, pass run time, completion latency,
each submission to the millisecond); other runs use ``DEFAULT_TIMING``, fitted on the seven
runs saved before issue 13's item 5 (the completing hold on the 15 saved before seed 103).
``replay`` (the default here) is ``cycle`` for a run without a full log; a run with one
(``--ctld-log`` from seed 79 on) replays what its log measured, pass by pass and job by
job: every backfill pass, every job's completion latency and submission; and it models
Slurm's whole-second backfill map, each job's epilog after its end (as its log names it,
else 3 ms) during which nothing starts, a job released by a dependency at the first pass
after that epilog, and no main-scheduler run at a job's end (see ``replay``).

``--nodes N``: the same 16 CPUs as N nodes of 16/N CPUs each (one slurmd per node on this
machine, ``LocalCluster(nodes=N)``); a job's CPUs (``sbatch -n``) may span nodes, and the
whole-node job takes them all.

``--fairshare [WEIGHT]``: the same workload with each job submitted by one of the four
accounts as under ``--qos`` (no QOS limits), under fair share (:data:`FAIRSHARE`). Its weight
is 100000 by default, far above age and size, so that only the users' order counts;
``--fairshare 1000`` weighs it as age and size are weighed, so that the factor's values
count too (Fair Tree's rank / user associations against classic ``2^(-U/S)``).

``--qos``: the same workload with each job submitted by one of four local accounts (drawn
per seed) under QOS limits (:data:`QOS`) in the cluster's own accounting database
(MariaDB, slurmdbd; ``scripts/slurm-cluster.sh --accounting``); the simulator replays it
with the same limits.

Targets (issue 2): the same start order for at least 90% of jobs, median start difference
at most 2 s. "Same order" per job: its place in the start order (how many jobs started
before it, starts within 1 s counting as simultaneous) is the same in both runs, within one
place. The share of job pairs ordered alike is printed too.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import tempfile
from dataclasses import asdict
from dataclasses import replace as with_field
from pathlib import Path

from hpcbase.slurm.ctldlog import TIMING_LINES
from sim.config import SlurmConfig
from sim.realcheck import (
    DEFAULT_TIMING,
    Figures,
    compare,
    measure_timing,
    real_vs_real,
    replay,
    run_timing,
    simulate,
    summary,
)
from sim.realslurm import WorkloadJob, run_workload

CPUS = 16
SCHED = """\
SchedulerParameters=bf_interval=1,bf_resolution=1,sched_interval=10,bf_max_job_test=500
PriorityWeightAge=1000
PriorityWeightJobSize=1000
PriorityMaxAge=00:10:00
PriorityCalcPeriod=1
"""
# With --qos: a jobs limit that holds jobs of every user (a CPU cap below 16 would hold the
# whole-node job for ever), and the accounts
QOS = "MaxJobsPerUser=2"
USERS = ("daemon", "bin", "sys", "games")
# With --fairshare: the same users under fair share (Slurm's default algorithm, Fair Tree),
# by default outweighing age and size, and usage that halves in 7 days, as at a site (with
# minutes, Slurm's decay of each period's new usage over its own span reorders close users,
# and the simulator folds new usage undecayed)
FAIRSHARE_WEIGHT = 100000
FAIRSHARE = """\
PriorityWeightFairshare={weight}
PriorityDecayHalfLife=7-0
"""
# With --ctld-log: what the backfill scheduler planned, and why, when the decay thread ran,
# and when each job's epilog ended (TraceJobs: also the ends slurmd answers as already
# complete, which slurmctld's agent marks without a line of its own; the log grows to a few MB).
DEBUG = """\
SlurmctldDebug=debug2
DebugFlags=Backfill,BackfillMap,Priority,TraceJobs
"""


def workload(seed: int, users: bool = False) -> list[WorkloadJob]:
    """48 jobs: a burst that fills the node, a whole-node job that must wait (its
    reservation leaves holes for short jobs), a dependency chain, and a steady trickle.
    Submissions fall on whole seconds: Slurm records times to the second, so sub-second
    offsets would make the order of simultaneous events ambiguous for the replay.
    ``users``: each job submitted by one of :data:`USERS`, drawn apart from the jobs."""
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
    if users:
        who = random.Random(seed + 1000)
        jobs = [with_field(j, user=who.choice(USERS)) for j in jobs]
    return jobs


def saved_seed(path: Path, saved: dict) -> int:
    """The workload seed of a saved run: stored with it, else ``seedN`` in its name, else 7."""
    if "seed" in saved:
        return int(saved["seed"])
    m = re.search(r"seed(\d+)", path.name)
    return int(m.group(1)) if m else 7


def save_run(
    dest: Path,
    seed: int,
    rows: list[dict],
    slurm_conf: str,
    qos: str | None,
    jobs: list[WorkloadJob],
    sim_start: dict[str, float] | None = None,
) -> None:
    """A real run as ``--load`` reads it (with the simulated starts once there are some)."""
    saved: dict = {"seed": seed, "real": rows, "slurm_conf": slurm_conf}
    if sim_start is not None:
        saved["sim_start"] = sim_start
    if qos:
        saved["qos"] = qos
    if any(j.user for j in jobs):
        saved["users"] = True
    saved["jobs"] = [asdict(j) for j in jobs]
    dest.write_text(json.dumps(saved, indent=1))


def variant(seed: int, qos: str | None, users: bool, slurm_conf: str) -> tuple[object, ...]:
    """What makes two recordings the same workload: the seed, the QOS limits, the users,
    the node count and the fair-share weight (read from the slurm.conf the run used)."""
    nodes = sum(line.startswith("NodeName=") for line in slurm_conf.splitlines())
    weight = re.search(r"^PriorityWeightFairshare=(\d+)", slurm_conf, re.M)
    return (seed, qos or "", users, nodes, int(weight.group(1)) if weight else 0)


def print_reproducibility(recorded: dict[tuple[object, ...], list[tuple[str, list[dict]]]]) -> None:
    """For every workload recorded more than once, real Slurm against itself."""
    lines = [
        (f"{la} vs {lb}", real_vs_real(ra, rb))
        for runs in recorded.values()
        for i, (la, ra) in enumerate(runs)
        for lb, rb in runs[i + 1 :]
    ]
    if lines:
        print("\nreal Slurm against itself (the same workload recorded twice):")
    for label, fig in lines:
        print(
            f"{label:<28} same place (within one) {100 * fig.same:5.1f}%; "
            f"median |start difference| {fig.median:.1f} s; p90 {fig.p90:.1f} s; "
            f"max {fig.max:.1f} s"
        )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--seed", type=int, help="workload seed (default 7; with --load: the saved run's)"
    )
    ap.add_argument("--save", type=Path, help="write the real and simulated rows as JSON")
    ap.add_argument(
        "--load", type=Path, nargs="+", help="reuse real-Slurm rows saved by --save (one or more)"
    )
    ap.add_argument(
        "--ctld-log",
        type=Path,
        help="keep the slurmctld log of the real run here, with backfill debug logging on",
    )
    ap.add_argument(
        "--qos", action="store_true", help=f"jobs of {len(USERS)} users under QOS limits {QOS}"
    )
    ap.add_argument(
        "--fairshare",
        type=int,
        nargs="?",
        const=FAIRSHARE_WEIGHT,
        metavar="WEIGHT",
        help=f"jobs of {len(USERS)} users under fair share of this weight "
        f"(default {FAIRSHARE_WEIGHT}: it outweighs age and size, 1000 each)",
    )
    ap.add_argument(
        "--nodes",
        type=int,
        default=1,
        choices=[n for n in range(1, CPUS + 1) if CPUS % n == 0],
        help=f"the {CPUS} CPUs as this many nodes (default 1)",
    )
    ap.add_argument("--timing", choices=("replay", "cycle", "aligned"), default="replay")
    ap.add_argument(
        "--default-timing",
        action="store_true",
        help="cycle timing with DEFAULT_TIMING even where a run's measured timing is kept",
    )
    args = ap.parse_args()
    runs: list[tuple[str, Figures, str]] = []
    # variant() -> its real runs: one workload
    recorded: dict[tuple[object, ...], list[tuple[str, list[dict]]]] = {}
    for path in args.load or [None]:
        with tempfile.TemporaryDirectory() as d:
            conf = Path(d) / "slurm.conf"
            if path is not None:
                saved = json.loads(path.read_text())
                seed = args.seed if args.seed is not None else saved_seed(path, saved)
                rows = saved["real"]
                conf.write_text(saved["slurm_conf"])
                qos = saved.get("qos")
                users = bool(saved.get("users", qos))
            else:
                seed = 7 if args.seed is None else args.seed
                extra = Path(d) / "sched.conf"
                fair = FAIRSHARE.format(weight=args.fairshare) if args.fairshare else ""
                extra.write_text(SCHED + fair + (DEBUG if args.ctld_log else ""))
                qos = QOS if args.qos else None
                users = args.qos or bool(args.fairshare)
                rows = run_workload(
                    workload(seed, users=users),
                    extra,
                    CPUS // args.nodes,
                    conf_out=conf,
                    log_out=args.ctld_log,
                    qos=qos,
                    nodes=args.nodes,
                )
                saved = {}
            jobs = workload(seed, users=users)
            if args.save and path is None:  # the real run is kept whatever happens next
                save_run(args.save, seed, rows, conf.read_text(), qos, jobs)
            cfg = SlurmConfig.from_file(conf)
            timing = None
            if args.timing != "aligned":
                if args.default_timing:
                    timing = DEFAULT_TIMING
                elif path is None and args.ctld_log:
                    timing = measure_timing(
                        args.ctld_log, rows, jobs, cfg.bf_interval, cfg.calc_period
                    )
                else:
                    timing = run_timing(path, saved, rows, jobs, cfg)
                timing = replay(timing) if args.timing == "replay" else summary(timing)
            sim_start = simulate(jobs, rows, conf, timing, qos=qos)
            conf_text = conf.read_text()
        fig = compare(rows, sim_start, table=len(args.load or [None]) == 1)
        label = path.stem.removeprefix("sim_fidelity_real_") if path else f"seed {seed} (now)"
        label += " qos" if qos and path is None else ""
        label += f" fairshare {args.fairshare}" if args.fairshare and path is None else ""
        label += f" {args.nodes} nodes" if args.nodes > 1 and path is None else ""
        how = (
            "aligned"
            if timing is None
            else f"{'replay' if timing.latencies else 'cycle'}, {timing.source}"
        )
        runs.append((label, fig, how))
        recorded.setdefault(variant(seed, qos, users, conf_text), []).append((label, rows))
        if args.save and path is None:
            save_run(args.save, seed, rows, conf_text, qos, jobs, sim_start)
            if args.ctld_log:  # the lines the timing is measured from, beside the rows
                keep = args.save.with_name(args.save.stem + ".ctld.log.gz")
                with open(args.ctld_log) as f, gzip.open(keep, "wt") as g:
                    g.writelines(line for line in f if TIMING_LINES.search(line))
    print()
    for label, fig, how in runs:
        print(
            f"{label:<14} {fig.jobs} jobs; same place (within one) {100 * fig.same:5.1f}%; "
            f"pairs {100 * fig.pairs:5.1f}%; median |start difference| {fig.median:.1f} s; "
            f"p90 {fig.p90:.1f} s; max {fig.max:.1f} s; "
            f"target {'met' if fig.met else 'missed'} [{how}]"
        )
    print_reproducibility(recorded)
    figs = [f for _, f, _ in runs]
    ok = sum(f.met for f in figs)
    print(
        f"RESULT runs={len(figs)} met={ok} "
        f"timing={'default' if args.default_timing else args.timing} "
        f"jobs={sum(f.jobs for f in figs)} "
        f"min_same_order_pct={100 * min(f.same for f in figs):.1f} "
        f"min_pair_order_pct={100 * min(f.pairs for f in figs):.1f} "
        f"max_median_abs_diff_s={max(f.median for f in figs):.2f} "
        f"max_abs_diff_s={max(f.max for f in figs):.1f} "
        f"target={'met' if ok == len(figs) else 'missed'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
