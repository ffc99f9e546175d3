"""Simulator speed end to end: `hpcsim replay` of a 450,000-job workload, phase by phase.

The generated Lublin-Feitelson workload (8,192 processors, load 0.85) is replayed by the real
command line (`python -m sim.cli replay ... --out schedule.csv --timings t.json`) in its own
process, so the figures include the interpreter's start, the imports, reading the trace,
the simulation (Slurm's default scheduler: priority/basic, backfill) and the report with its
schedule CSV. The workload carries recorded starts, so the report compares them with the
simulated ones as it does for real logs: they come from a first replay of the same jobs
under multifactor priority (age, fair-share and size weights, as bench/sim_speed.py timed
before) with backfill, which is also the baseline of the ratios (same run, same machine).

Cases, each a fresh process:

* ``baseline``: the multifactor replay of the workload without recorded starts, text parsed;
* ``cold``: the default replay, the trace parsed from text (``--no-cache``);
* ``cached``: the same with the Parquet cache of the trace (made by the cold case's
  sibling run, untimed);
* ``profiled``: the cached replay with a stored site profile (issue 23). The profile is what
  ``hpcsim fit`` chooses (one replay per setting) for a 20,000-job workload of the same
  generator, recorded the same way (untimed; fitting the 450k log itself would replay it
  dozens of times), stored beside the 450k log. A fitted per-user limit runs the schedulers'
  limit checks (compiled in sim/_backfill.c); a fitted availability timeline can leave the
  replay a longer queue than the recorded one, which the report's fidelity shows.

For each: wall and CPU seconds of the process, and wall, CPU and peak RSS of each phase
(read; infer: the world the log shows, where no profile gives it; simulate; report).
Target (issues 13 and 23): the 450k replay in at most 20 s on one core, with a stored
profile too, checked on the process's CPU seconds (user + system, one core): the machine
is shared, so wall times include waiting for a core; they are printed too, with the ratios
against the baseline measured in the same run.

    .venv/bin/python bench/sim_speed.py [--jobs 450000] [--load 0.85] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TARGET_S = 20.0
SAMPLE_JOBS = 20_000  # the workload the profile is fitted on (untimed)
MULTIFACTOR_CONF = """\
PriorityType=priority/multifactor
PriorityFlags=NO_FAIR_TREE
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=1000
AccountingStorageType=accounting_storage/slurmdbd
"""


def hpcsim(*args: str) -> tuple[dict, str, float, float]:
    """Run ``python -m sim.cli ARGS`` in a fresh process: (timings, stdout, wall s, CPU s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "sim.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"hpcsim {' '.join(args)} failed ({res.returncode}):\n{res.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    timings = {}
    if "--timings" in args:
        timings = json.loads(Path(args[args.index("--timings") + 1]).read_text())
    return timings, res.stdout + res.stderr, wall, cpu


def make_workloads(work: Path, jobs: int, load: float) -> tuple[Path, Path]:
    from sim.generate import generate
    from sim.traces import write_swf

    plain = work / f"lublin{jobs // 1000}k.swf"
    write_swf(generate(jobs, 8192, seed=1, load=load), plain)
    return plain, work / f"lublin{jobs // 1000}k-recorded.swf"


def add_recorded(plain: Path, schedule: Path, out: Path) -> None:
    """The workload with the baseline's schedule as its recorded starts (SWF wait field)."""
    from sim.traces import read_trace, write_swf

    trace = read_trace(plain)
    df = pd.read_csv(schedule, usecols=["job_id", "start"])
    start = pd.Series(df["start"].to_numpy(), index=df["job_id"].to_numpy())
    recorded = start.reindex(trace.job_id).to_numpy(dtype=np.float64)
    write_swf(replace(trace, recorded_start=recorded), out)


def store_profile(recorded: Path, work: Path, load: float, conf: Path) -> str:
    """Fit a site profile (``hpcsim fit``, one replay per setting) on a 20,000-job workload
    of the same generator, recorded the same way, and store its settings for ``recorded``;
    returns the stored profile's description. Fitting the 450k log itself would replay it
    dozens of times."""
    from sim.fit import fit, starting_profile
    from sim.profile import store
    from sim.traces import read_trace

    plain, sample = make_workloads(work, SAMPLE_JOBS, load)
    hpcsim(
        "replay", str(plain), "--slurm-conf", str(conf), "--no-cache", "--no-progress",
        "--out", str(work / "sample-base.csv"),
    )  # fmt: skip
    add_recorded(plain, work / "sample-base.csv", sample)
    fitted = fit(read_trace(sample, cache=False), jitters=1)
    profile = replace(
        starting_profile(read_trace(recorded)),
        priority=fitted.priority,
        batch_sched_delay=fitted.batch_sched_delay,
        window_s=fitted.window_s,
        clamp=fitted.clamp,
        limits=fitted.limits,
        larger_jobs_exempt=fitted.larger_jobs_exempt,
        user_limits=fitted.user_limits,
    )
    store(profile, recorded)
    return profile.describe()


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=450_000)
    ap.add_argument(
        "--load", type=float, default=0.85, help="offered load of the generated workload"
    )
    ap.add_argument("--workdir", type=Path, help="keep the workloads and outputs here")
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    console = Console(width=130)
    tmp = None
    if args.workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="sim-speed-")
        work = Path(tmp.name)
    else:
        work = args.workdir
        work.mkdir(parents=True, exist_ok=True)
    try:
        plain, recorded = make_workloads(work, args.jobs, args.load)
        conf = work / "multifactor.conf"
        conf.write_text(MULTIFACTOR_CONF)
        runs: dict[str, tuple[dict, str, float, float]] = {}
        runs["baseline"] = hpcsim(
            "replay",
            str(plain),
            "--slurm-conf",
            str(conf),
            "--no-cache",
            "--no-progress",
            "--out",
            str(work / "base.csv"),
            "--timings",
            str(work / "t-base.json"),
        )
        add_recorded(plain, work / "base.csv", recorded)
        for old in work.glob(f".{recorded.name}.*.parquet"):
            old.unlink()
        common = ("--no-progress", "--out", str(work / "schedule.csv"))
        # without a profile, even where a reused --workdir holds one from an earlier run
        plain_replay = ("--no-profile", *common)
        runs["cold"] = hpcsim(
            "replay", str(recorded), "--no-cache", *plain_replay,
            "--timings", str(work / "t-cold.json"),
        )  # fmt: skip
        hpcsim("replay", str(recorded), *plain_replay)  # fills the Parquet cache (untimed)
        runs["cached"] = hpcsim(
            "replay", str(recorded), *plain_replay, "--timings", str(work / "t-cached.json")
        )
        with console.status("fitting the site profile on a 20,000-job sample (untimed)"):
            profile = store_profile(recorded, work, args.load, conf)
        runs["profiled"] = hpcsim(
            "replay", str(recorded), *common, "--timings", str(work / "t-profiled.json")
        )
        if "profile" not in runs["profiled"][1]:
            raise SystemExit("the replay did not say which profile it used")
    finally:
        if tmp is not None:
            tmp.cleanup()

    table = Table(
        title=f"hpcsim replay end to end, {args.jobs:,} jobs (8,192 procs, load {args.load})"
    )
    for col in (
        "case",
        "process wall s",
        "process CPU s",
        "read s / MB",
        "infer s / MB",
        "simulate s / MB",
        "report s / MB",
        "ratio CPU vs baseline",
    ):
        table.add_column(col, justify="right")
    base_cpu = runs["baseline"][3]
    for name, (t, _, wall, cpu) in runs.items():
        ph = t["phases"]
        phases = ("read", "infer", "simulate", "report")
        cells = [f"{ph[p]['cpu_s']:.2f} / {ph[p]['peak_mb']:.0f}" for p in phases]
        table.add_row(name, f"{wall:.2f}", f"{cpu:.2f}", *cells, f"{cpu / base_cpu:.2f}")
    console.print(table)
    console.print(
        "phases: CPU seconds / peak RSS during the phase (MB); process: whole "
        "command including interpreter start and imports"
    )
    print("\nreport of the cached run:")
    print(runs["cached"][1])
    print(f"\nstored profile: {profile}\nreport of the profiled run:")
    print(runs["profiled"][1])
    t_cold, t_cached = runs["cold"][0]["phases"], runs["cached"][0]["phases"]
    cached_wall, cached_cpu = runs["cached"][2], runs["cached"][3]
    fields = {
        "jobs": args.jobs,
        "e2e_wall_s": round(cached_wall, 2),
        "e2e_cpu_s": round(cached_cpu, 2),
        "cold_e2e_wall_s": round(runs["cold"][2], 2),
        "cold_e2e_cpu_s": round(runs["cold"][3], 2),
        "read_cold_s": round(t_cold["read"]["cpu_s"], 2),
        "read_cached_s": round(t_cached["read"]["cpu_s"], 2),
        "infer_s": round(t_cached["infer"]["cpu_s"], 2),
        "simulate_s": round(t_cached["simulate"]["cpu_s"], 2),
        "report_s": round(t_cached["report"]["cpu_s"], 2),
        "peak_mb": round(max(p["peak_mb"] for p in t_cached.values())),
        "baseline_cpu_s": round(base_cpu, 2),
        "ratio_vs_baseline": round(cached_cpu / base_cpu, 2),
        "cold_ratio_vs_baseline": round(runs["cold"][3] / base_cpu, 2),
        "read_speedup_cached": round(
            t_cold["read"]["cpu_s"] / max(t_cached["read"]["cpu_s"], 1e-9), 1
        ),
        "profiled_e2e_wall_s": round(runs["profiled"][2], 2),
        "profiled_e2e_cpu_s": round(runs["profiled"][3], 2),
        "profiled_simulate_s": round(runs["profiled"][0]["phases"]["simulate"]["cpu_s"], 2),
        "target_20s_cpu": "met" if cached_cpu <= TARGET_S else "missed",
        "target_20s_profiled_cpu": "met" if runs["profiled"][3] <= TARGET_S else "missed",
        "target_20s_cold_cpu": "met" if runs["cold"][3] <= TARGET_S else "missed",
    }
    print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
