"""Checking the simulator against real Slurm: one workload run on real slurmctld
(:func:`sim.realslurm.run_workload`) and replayed by the simulator from the same slurm.conf,
job by job.

:func:`simulate` replays the jobs as real Slurm received them (each submitted at the second
Slurm recorded, running as long as it really ran); everything else, when each starts, is the
simulator's own decision. :func:`compare` gives the :class:`Figures` (same start order within
one place, median start difference). A run's sub-second :class:`Timing` (backfill phase and
pass cost, completion latency, submissions to the millisecond) comes from its slurmctld log
(:func:`measure_timing`, through :mod:`hpcbase.slurm.ctldlog`); a run without one uses
:data:`DEFAULT_TIMING`. ``bench/sim_fidelity.py`` is the benchmark built on this.
"""

from __future__ import annotations

import math
import re
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypedDict, Unpack

from hpcbase.jobs import JobSpec
from hpcbase.slurm.ctldlog import read_events
from sim.config import SlurmConfig
from sim.engine import BackfillCycle, JobView, Simulator
from sim.limits import QosLimits
from sim.realslurm import WorkloadJob


@dataclass
class Timing:
    """Sub-second timing of one real run, for the ``cycle`` replay (seconds; the first
    submission's whole second is t = 0)."""

    bf_phase: float  # the backfill loop's first wake-up
    bf_cost: float  # run time of one backfill pass: the loop's drift per pass
    end_latency: float  # from a job's sleep ending to slurmctld processing its end
    completing: float = 0.0  # then the epilog round trip, during which nothing starts
    completing_window: float = math.inf  # ... after ends this soon after a backfill pass
    submit_phase: float = 0.0  # sub-second offset of every submission, when not per job
    submits: dict[str, float] = field(default_factory=dict)  # per job, from the log
    latencies: dict[str, float] = field(default_factory=dict)  # per job, from the log
    epilog: float = 0.0  # after every end, no start for this long (node COMPLETING)
    main_on_end: bool = True  # a job's end runs the main scheduler at once
    whole_seconds: bool = False  # the backfill map in Slurm's whole seconds
    passes: list[float] = field(default_factory=list)  # backfill passes, from the log
    mains: list[tuple[float, bool]] = field(default_factory=list)  # main runs (full?), log
    #: slurmctld's background loop: (a tick, its drift per tick, a full run's second)
    main_ticks: tuple[float, float, float] | None = None
    calc_phase: float = 0.0  # the decay thread's runs: this plus multiples of the period
    epilogs: dict[str, float] = field(default_factory=dict)  # per job, the late ones, log
    source: str = "default"

    def cycle(self) -> BackfillCycle:
        return BackfillCycle(
            phase=self.bf_phase,
            cost=self.bf_cost,
            end_latency=self.end_latency,
            completing=self.completing,
            completing_window=self.completing_window,
            wakes=tuple(self.passes),
            epilog=self.epilog,
            main_on_end=self.main_on_end,
            whole_seconds=self.whole_seconds,
            main_wakes=tuple(t for t, _ in self.mains),
            main_full=tuple(full for _, full in self.mains),
            main_ticks=self.main_ticks,
            calc_phase=self.calc_phase,
            epilogs=tuple(sorted(self.epilogs.items())),
        )


# Fitted on the seven runs saved before issue 13's item 5 (seed 7 x 3, seeds 11 x 2, 23,
# 31): the free parameters of a run without a log. The completing pause (an end processed
# within 30 ms after a backfill pass began holds every start 0.94 s) was fitted on the 15
# runs saved before seeds 103, 107 and 109, and applies to every run. See docs/results.md.
DEFAULT_TIMING = Timing(
    bf_phase=0.7,
    bf_cost=0.004,
    end_latency=0.1,
    submit_phase=0.0,
    completing=0.94,
    completing_window=0.03,
)

# --timing replay: a node stays COMPLETING until its epilog ends. For a job whose log does
# not name its epilog's end: the median of the 585 epilogs that the TraceJobs logs of
# session 32 name (2 to 31 ms, p10 2, p90 7; epilog_lengths.py in
# docs/bench-data/probes-2026-12-02-session33): measured, not fitted. Until session 33 it
# was 6 ms, the median of the slow ones that a debug2 log names alone.
REPLAY_EPILOG = 0.003


def replay(t: Timing) -> Timing:
    """The ``replay`` timing of a run with its full log (``--ctld-log`` from seed 79 on:
    submissions, backfill passes and job ends to the millisecond): every pass, every main
    scheduler run (where the log is at ``debug`` level) and every job's completion latency
    as measured, Slurm's whole-second backfill map, a job's end
    holding every start for ``REPLAY_EPILOG`` and running no main scheduler (the backfill
    loop starts the next job), and no completing hold. A run without one keeps ``t``
    without its per-job parts (the ``cycle`` timing)."""
    return _as_replayed(t) if t.latencies else summary(t)


def summary(t: Timing) -> Timing:
    """The ``cycle`` timing: ``t`` without what is measured job by job or pass by pass.
    With the background loop's ticks (``main_ticks``) the rest is as ``replay``'s."""
    t = replace(t, latencies={}, passes=[], mains=[], epilogs={})
    return t if t.main_ticks is None else _as_replayed(t)


def _as_replayed(t: Timing) -> Timing:
    """``t`` with the ``replay`` timing's rules: Slurm's whole-second backfill map, a job's
    end holding every start for ``REPLAY_EPILOG`` and running no main scheduler, and no
    completing hold."""
    return replace(t, whole_seconds=True, epilog=REPLAY_EPILOG, main_on_end=False, completing=0.0)


class QosChanges(TypedDict, total=False):
    """The QOS limits of a run (:func:`sim.realslurm.run_workload`'s): ``qos``, and the
    changes it made (``qos_applied``: Unix time, limits); each change sets its keys and
    keeps the others, as ``sacctmgr modify`` does."""

    qos: str | None
    qos_applied: Sequence[tuple[float, str]]


def simulate(
    jobs: list[WorkloadJob],
    rows: list[dict],
    conf: Path,
    timing: Timing | None = None,
    **limits: Unpack[QosChanges],
) -> dict[str, float]:
    """Replay the jobs as real Slurm received them, under the run's QOS ``limits``;
    returns simulated start per name (Unix time).

    With ``timing`` (the ``cycle`` replay) each job runs its sleep, submissions fall at
    their sub-second times, and a start is reported, as Slurm records it, at the whole
    second it fell in."""
    t0, views = replayed_jobs(jobs, rows, conf, timing, **limits)
    starts = {name: v.start for name, v in views.items()}
    if timing is not None:
        starts = {k: math.floor(v) for k, v in starts.items()}
    return {k: v + t0 for k, v in starts.items()}


def replayed_jobs(
    jobs: list[WorkloadJob],
    rows: list[dict],
    conf: Path,
    timing: Timing | None = None,
    **limits: Unpack[QosChanges],
) -> tuple[float, dict[str, JobView]]:
    """:func:`simulate`'s replay: the first submission's whole second (Unix time, the
    replay's t = 0) and each job's view at the end, by name (times from t = 0)."""
    cfg = SlurmConfig.from_file(conf)
    t0 = min(r["submit"] for r in rows)
    qos = limits.get("qos")
    text = qos or ""
    held = QosLimits.from_text(text, "qos") if qos else None
    steps = []
    for at, change in limits.get("qos_applied", ()):
        text = f"{text} {change}"
        steps.append((at - t0, QosLimits.from_text(text, "qos")))
    users = {u: k for k, u in enumerate(sorted({j.user for j in jobs}))}
    # The local cluster's association tree (run as root: sbatch --uid): root's own
    # association beside the account that holds the workload's users. Fair Tree divides
    # by both, and root's, running nothing, ranks above them.
    associations = len(users) + 1 if any(j.user for j in jobs) else 0
    sim = Simulator(
        None,
        cfg,
        epoch=t0,
        cycle=timing.cycle() if timing else None,
        limits=held,
        limit_steps=steps,
        users=len(users),
        associations=associations,
    )
    by_name = {r["name"]: r for r in rows}
    ids: dict[str, int] = {}

    def arrival(name: str) -> float:
        at = by_name[name]["submit"] - t0
        if timing is None:
            return at
        # a logged time may round into the next second; Slurm's record is the floor
        sub = timing.submits.get(name, at + timing.submit_phase)
        return sub if math.floor(sub) == at else at + timing.submit_phase

    order = sorted(jobs, key=lambda j: (arrival(j.name), by_name[j.name]["job_id"]))
    prev = 0.0
    for job in order:
        row = by_name[job.name]
        # Jobs of one second arrive together, before that second's scheduler passes:
        # advance only to the previous submission second and queue these at their own.
        at = arrival(job.name)
        if at > prev:
            sim.advance(prev)
            prev = at
        dep = job.dependency or ""
        if any(arrival(n) == at for n in re.findall(r":([\w.-]+)", dep)):
            sim.advance(at)  # its dependency must have arrived: a rare same-second chain
        for name, jid in ids.items():
            dep = dep.replace(f":{name}", f":{jid}")
        ran = (row["end"] - row["start"]) if row["start"] is not None else 0.0
        if timing is not None and row["start"] is not None:
            ran = float(job.sleep_s)
            if job.name in timing.latencies:  # its own completion latency, measured
                ran += timing.latencies[job.name] - timing.end_latency
        ids[job.name] = sim.submit(
            JobSpec(
                units=row["cpus"],
                limit=row["limit_s"],
                runtime=ran,
                submit=at,
                name=job.name,
                dependency=dep,
                partition=job.partition,
                user=users[job.user],
            )
        )
    sim.run()
    return t0, {name: sim.job(jid) for name, jid in ids.items()}


def measure_timing(
    log: Path,
    rows: list[dict],
    jobs: list[WorkloadJob],
    bf_interval: float = 1.0,
    calc_period: float = 300.0,
) -> Timing:
    """The run's sub-second timing from its slurmctld log (times in the log are local):
    the first backfill pass, the median pass run time (drift of passes one interval apart),
    each job's completion latency (end processed - start - sleep, its start counted from
    the scheduler run that made it: :func:`run_began`) and their median over
    backfill-started jobs, each submission, the epilogs the log names (a ``debug2`` log
    names the late ones, a ``TraceJobs`` one every one), and the
    decay thread's phase within ``calc_period`` (its runs, logged with
    ``DebugFlags=Priority``). What the log lacks (an older log kept only the backfill
    lines) is ``DEFAULT_TIMING``'s."""
    t0 = min(r["submit"] for r in rows)
    name = {r["job_id"]: r["name"] for r in rows}
    sleep = {j.name: float(j.sleep_s) for j in jobs}
    found = {k: [(w - t0, j) for w, j in v] for k, v in read_events(log).items()}
    t = replace(DEFAULT_TIMING, submits={}, source="")
    measured = []
    passes = [w for w, _ in found["pass"] if w >= 0]  # none before the first submission
    if passes:
        t.bf_phase = passes[0]
        drift = [b - a - bf_interval for a, b in zip(passes, passes[1:], strict=False)]
        drift = [d for d in drift if 0 <= d < 0.5]
        if drift:
            t.bf_cost = statistics.median(drift)
        measured.append("backfill phase and pass time")
    # a start counts from the scheduler run that made it (the replay starts a job then),
    # not from its own line, logged a few milliseconds into the run
    runs = sorted(
        [w for w, _ in found["pass"]]
        + [w for w, _ in found["main"]]
        + [w for w, _ in found["main_full"]]
    )
    start = {name[j]: run_began(runs, w) for w, j in found["start"] if j in name}
    lat = [w - start[name[j]] - sleep[name[j]] for w, j in found["end"] if name.get(j) in start]
    if lat:
        t.end_latency = statistics.median(lat)
        measured.append("completion latency")
    start.update({name[j]: run_began(runs, w) for w, j in found["main_start"] if j in name})
    t.latencies = {
        name[j]: w - start[name[j]] - sleep[name[j]]
        for w, j in found["end"]
        if name.get(j) in start
    }
    t.passes = passes
    mains = [(w, False) for w, _ in found["main"]] + [(w, True) for w, _ in found["main_full"]]
    t.mains = sorted(m for m in mains if m[0] >= 0)
    if t.mains:
        measured.append("main scheduler runs")
        t.main_ticks = loop_ticks(t.mains)
    t.submits = {name[j]: w for w, j in found["submit"] if j in name}
    if t.submits:
        measured.append("submissions")
    ended = {name[j]: w for w, j in found["end"] if j in name}
    t.epilogs = {name[j]: w - ended[name[j]] for w, j in found["epilog"] if name.get(j) in ended}
    if found["decay"]:
        t.calc_phase = found["decay"][0][0] % calc_period
        measured.append("decay thread")
    t.source = "measured: " + ", ".join(measured) if measured else "default"
    return t


RUN_SPAN = 0.05  # a start logged this long after a scheduler run began belongs to it (s)


def run_began(runs: list[float], logged: float) -> float:
    """When the scheduler run that logged a start at ``logged`` began: the last backfill
    pass or main-scheduler run at most ``RUN_SPAN`` before (``runs`` sorted), else the
    logged time itself (a log without those lines)."""
    i = bisect_right(runs, logged)
    return runs[i - 1] if i and logged - runs[i - 1] <= RUN_SPAN else logged


def loop_ticks(mains: list[tuple[float, bool]]) -> tuple[float, float, float] | None:
    """slurmctld's background loop from its main runs (time, full queue?): the first run's
    time, the mean drift per one-second tick between the first and the last run, and the
    whole second of the first full run (None without one)."""
    full = [w for w, f in mains if f]
    if not full:
        return None
    times = [w for w, _ in mains]
    ticks = sum(round(b - a) for a, b in zip(times, times[1:], strict=False))
    drift = (times[-1] - times[0] - ticks) / ticks if ticks else 0.0
    return times[0], max(0.0, drift), float(math.floor(full[0]))


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


@dataclass
class Figures:
    """How one run's simulated starts compare with the real ones."""

    jobs: int
    same: float  # share of jobs in the same place (within one)
    pairs: float  # share of job pairs in the same order
    median: float  # median |start difference|, s
    p90: float
    max: float

    @property
    def met(self) -> bool:
        return self.same >= 0.9 and self.median <= 2.0


def compare(rows: list[dict], sim_start: dict[str, float], table: bool) -> Figures:
    """The figures of one run; with ``table``, print its per-job starts first."""
    real_start = {r["name"]: float(r["start"]) for r in rows if r["start"] is not None}
    sim_start = {k: v for k, v in sim_start.items() if k in real_start}
    rr, rs = positions(real_start), positions(sim_start)
    t0 = min(r["submit"] for r in rows)
    diffs = {k: sim_start[k] - real_start[k] for k in real_start}
    if table:
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
    abs_d = sorted(abs(v) for v in diffs.values())
    return Figures(
        jobs=len(real_start),
        same=sum(abs(rr[k] - rs[k]) <= 1 for k in real_start) / len(real_start),
        pairs=pair_agreement(real_start, sim_start),
        median=statistics.median(abs_d),
        p90=abs_d[int(0.9 * len(abs_d)) - 1],
        max=abs_d[-1],
    )


def run_timing(
    path: Path | None, saved: dict, rows: list[dict], jobs: list[WorkloadJob], cfg: SlurmConfig
) -> Timing:
    """The cycle replay's timing of a saved run: measured from the log kept beside it
    (``NAME.ctld.log.gz``, or an older ``NAME.backfill.log.gz``), else the default."""
    if path is not None:
        for suffix in (".ctld.log.gz", ".backfill.log.gz"):
            log = path.with_name(path.stem + suffix)
            if log.exists():
                return measure_timing(log, rows, jobs, cfg.bf_interval, cfg.calc_period)
    return DEFAULT_TIMING


def real_vs_real(a: list[dict], b: list[dict]) -> Figures:
    """How far two real runs of one workload are apart: ``b``'s starts against ``a``'s, each
    from its own first submission (the floor of what any replay can match)."""
    shift = min(r["submit"] for r in a) - min(r["submit"] for r in b)
    return compare(a, {r["name"]: r["start"] + shift for r in b if r["start"] is not None}, False)
