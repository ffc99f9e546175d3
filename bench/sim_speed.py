"""Simulator speed: jobs per second, CPU seconds and peak memory.

Replays the LS6 trace and a generated 450,000-job, 8,192-processor Lublin-Feitelson workload
with Slurm's default backfill parameters and multifactor priority, and, in the same run, the
same workloads under a plain FCFS replay (sched/builtin, priority/basic) as the baseline.
Each case runs in its own process so that its peak RSS is its own.

    .venv/bin/python bench/sim_speed.py [--jobs 450000] [--load 0.85]

Target (issue 2): the 450k workload in at most 30 s on one core, peak memory at most 2 GB.
CPU seconds are reported beside wall seconds: on a shared machine wall time includes waiting
for a core, CPU time does not.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LS6 = ROOT.parent / "shared" / "traces" / "ls6-a100.log"
MULTIFACTOR = dict(
    priority_type="priority/multifactor",
    weight_age=1000,
    weight_fairshare=10000,
    weight_job_size=1000,
)
FCFS = dict(scheduler_type="sched/builtin")


def run_case(workload: str, policy: str, jobs: int, load: float) -> dict:
    sys.path.insert(0, str(ROOT))
    from sim.config import SlurmConfig
    from sim.engine import Simulator

    if workload == "ls6":
        from sim.traces.read import read_trace

        trace, units = read_trace(LS6), 84
    else:
        from sim.generate import generate

        trace, units = generate(jobs, 8192, seed=1, load=load), 8192
    cfg = SlurmConfig(**(MULTIFACTOR if policy == "multifactor+backfill" else FCFS))
    sim = Simulator(trace, cfg, total_units=units)
    w0, c0 = time.perf_counter(), time.process_time()
    sim.run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    assert len(sim.records) + sim.pending_count == len(trace)
    return {
        "workload": workload,
        "policy": policy,
        "jobs": len(trace),
        "wall_s": wall,
        "cpu_s": cpu,
        "jobs_per_s": len(trace) / cpu,
        "backfilled": sim.n_backfilled,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=450_000)
    ap.add_argument(
        "--load", type=float, default=0.85, help="offered load of the generated workload"
    )
    ap.add_argument("--case", nargs=2, metavar=("WORKLOAD", "POLICY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case[0], args.case[1], args.jobs, args.load)))
        return 0
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    cases = [(w, p) for w in ("ls6", "lublin") for p in ("fcfs", "multifactor+backfill")]
    if not LS6.exists():
        cases = [c for c in cases if c[0] != "ls6"]
    results = []
    with Progress(transient=True) as bar:
        task = bar.add_task("cases", total=len(cases))
        for w, p in cases:
            bar.update(task, description=f"{w} / {p}")
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--jobs",
                    str(args.jobs),
                    "--load",
                    str(args.load),
                    "--case",
                    w,
                    p,
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            results.append(json.loads(out.strip().splitlines()[-1]))
            bar.advance(task)
    table = Table(title="simulator speed (CPU seconds on one core)")
    for col in ("workload", "policy", "jobs", "cpu s", "wall s", "jobs/s", "backfilled", "peak MB"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            r["workload"],
            r["policy"],
            f"{r['jobs']:,}",
            f"{r['cpu_s']:.1f}",
            f"{r['wall_s']:.1f}",
            f"{r['jobs_per_s']:,.0f}",
            f"{r['backfilled']:,}",
            f"{r['peak_rss_mb']:.0f}",
        )
    Console().print(table)
    by = {(r["workload"], r["policy"]): r for r in results}
    big = by[("lublin", "multifactor+backfill")]
    base = by[("lublin", "fcfs")]
    fields = {
        "lublin_jobs": big["jobs"],
        "lublin_cpu_s": round(big["cpu_s"], 2),
        "lublin_wall_s": round(big["wall_s"], 2),
        "lublin_jobs_per_s": round(big["jobs_per_s"]),
        "lublin_peak_mb": round(big["peak_rss_mb"]),
        "ratio_vs_fcfs": round(big["cpu_s"] / base["cpu_s"], 2),
        "target_30s": "met" if big["cpu_s"] <= 30 else "missed",
        "target_2gb": "met" if big["peak_rss_mb"] <= 2048 else "missed",
    }
    if ("ls6", "multifactor+backfill") in by:
        ls6 = by[("ls6", "multifactor+backfill")]
        fields["ls6_jobs_per_s"] = round(ls6["jobs_per_s"])
        fields["ls6_ratio_vs_fcfs"] = round(ls6["cpu_s"] / by[("ls6", "fcfs")]["cpu_s"], 2)
    print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
