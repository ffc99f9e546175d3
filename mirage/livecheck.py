"""``mirage live-check``: a site's trace replayed on real Slurm at Mirage's own time scale,
compressed ``k`` times, with chains driven by the live path; the same compressed workload
through the simulator; the gaps side by side; and every live decision audited offline.

A site admin runs it on their own trace before trusting a model::

    mirage live-check TRACE --start 2023-01-10 --hours 48 --k 240 \\
        --policies default,reactive,average --chains 6 [--slurm-conf site-sched.conf]

What happens:

1. The slice ``[start, start + hours)`` of the trace (with the jobs queued or running at its
   start) is compressed: every duration divided by ``k`` (48 h -> 12 min at k = 240), the
   site's nodes mapped onto the CPUs of a local one-node cluster (:mod:`sim.compress`).
2. A fresh local Slurm cluster (:mod:`hpcbase.slurm.localcluster`) runs that load as
   ``sleep`` jobs, with Slurm's scheduler intervals divided by ``k`` where Slurm allows
   (:func:`scaled_scheduler`; what cannot scale is listed).
3. ``--chains`` chain starts spread over the slice; at each, one two-segment chain per policy
   runs through the live path (queue samples -> observation builder -> policy -> ``sbatch``)
   with ``time_scale = k``: samples and decisions every 600 s / k, the model seeing the queue
   at the site's scale.
4. The same compressed workload and chain starts go through the simulator configured from the
   very slurm.conf the cluster ran, with the same time scale.
5. Each chain's gap, live and simulated, in compressed and site seconds; and the journal of
   live samples and decisions replayed offline (:mod:`mirage.live.audit`).

Ends with ``RESULT ...``. A CI-sized run: ``--hours 2 --k 240 --chains 1``.
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from tqdm import tqdm

from hpcbase.slurm import CliClient, RetryPolicy, SlurmError
from hpcbase.slurm.localcluster import LocalCluster, missing_programs
from mirage.chain.driver import ChainDriver
from mirage.chain.store import ACTIVE, ChainStore
from mirage.envs.episode import ChainEpisode, EpisodeError, play
from mirage.envs.world import ChainWorld, ResolvedChain
from mirage.live.audit import AuditResult, audit
from mirage.live.decisions import DecisionService, JournalEntry, resolve_policy
from mirage.live.history import QueueHistory
from mirage.observation import DECISION_INTERVAL, SAMPLE_INTERVAL, WINDOW
from sim.calibration import stored_units
from sim.compress import compress
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.realslurm import WorkloadJob, workload_of
from sim.traces.model import Trace
from sim.traces.read import read_trace

SITE_MAX_LIMIT = 48 * 3600.0  # the features' normalisation, site seconds (LS6's maximum)


@dataclass(frozen=True)
class Plan:
    """What to replay and how (times in site seconds unless named ``_wall``)."""

    k: float
    cpus: int
    site_units: int  # the site's nodes, mapped onto ``cpus``
    chain_limit: float = SITE_MAX_LIMIT  # each segment's limit
    chain_units: int = 1  # site nodes
    segments: int = 2
    policies: tuple[str, ...] = ("default", "reactive", "average")
    starts_wall: tuple[float, ...] = ()  # chain starts, seconds after the load begins
    window: int = WINDOW

    @property
    def units(self) -> int:
        """A segment's CPUs on the local cluster."""
        return max(1, round(self.chain_units * self.cpus / self.site_units))

    @property
    def interval_wall(self) -> float:
        """Samples and decisions, on the cluster's clock."""
        return SAMPLE_INTERVAL / self.k

    @property
    def limit_min(self) -> int:
        """The segments' Slurm limit, whole minutes (Slurm's resolution)."""
        return max(1, math.ceil(self.chain_limit / self.k / 60.0))

    @property
    def sleep_wall(self) -> float:
        """A segment runs to just before its limit, as a long training run does."""
        return self.limit_min * 60.0 - max(2.0, 0.02 * self.limit_min * 60.0)


def scaled_scheduler(k: float) -> tuple[str, list[str]]:
    """slurm.conf lines with Slurm's scheduler intervals divided by ``k`` where Slurm accepts
    it, and what could not be scaled (Slurm's defaults: sched_interval 60 s, bf_interval
    30 s, bf_resolution 60 s, PriorityCalcPeriod 5 min, MinJobAge 300 s)."""
    floor = []

    def scaled(name: str, seconds: float, least: int) -> int:
        value = seconds / k
        if value < least:
            floor.append(f"{name} {seconds:g} s / {k:g} = {value:.2g} s, Slurm's least is {least}")
        return max(least, round(value))

    si = scaled("sched_interval", 60, 1)
    bi = scaled("bf_interval", 30, 1)
    br = scaled("bf_resolution", 60, 1)
    age = scaled("MinJobAge", 300, 2)
    floor.append(f"PriorityCalcPeriod 5 min / {k:g}: Slurm counts it in whole minutes (1)")
    floor.append("time limits: Slurm keeps whole minutes, so a limit is rounded up to k min")
    text = (
        f"SchedulerParameters=sched_interval={si},bf_interval={bi},bf_resolution={br},"
        "bf_max_job_test=500\n"
        f"MinJobAge={age}\nPriorityCalcPeriod=1\n"
    )
    return text, floor


@dataclass
class LiveRun:
    """The live half: each chain's gaps (wall seconds) by (policy, start index)."""

    gaps: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    presubmitted: dict[tuple[str, int], int] = field(default_factory=dict)
    journal: list[JournalEntry] = field(default_factory=list)
    slurm_conf: str = ""


def _submit_load(
    client: CliClient, jobs: list[WorkloadJob], t0: float, stop: threading.Event
) -> None:
    """Submit each job at its offset after ``t0`` (a thread; errors are reported, skipped)."""
    for job in sorted(jobs, key=lambda j: j.submit_offset_s):
        delay = t0 + job.submit_offset_s - time.time()
        if delay > 0 and stop.wait(delay):
            return
        try:
            client.submit(
                f"sleep {job.sleep_s:g}",
                {
                    "J": job.name,
                    "n": job.cpus,
                    "time": max(1, math.ceil(job.limit_s / 60)),
                    "output": "/dev/null",
                },
            )
        except SlurmError as e:
            print(f"load job {job.name}: {e}", file=sys.stderr)


def run_live(plan: Plan, load: list[WorkloadJob], workdir: Path, progress: bool = True) -> LiveRun:
    """Run the load and the chains on a fresh local cluster; returns gaps and journal."""
    conf_text, _ = scaled_scheduler(plan.k)
    extra = workdir / "sched.conf"
    extra.write_text(conf_text)
    cluster = LocalCluster(workdir / "c", cpus=plan.cpus, conf_extra=extra, cgroups="no")
    out = LiveRun()
    stop = threading.Event()
    try:
        cluster.start()
        out.slurm_conf = cluster.conf_path.read_text()
        client = CliClient(
            cluster.conf_path,
            min_interval=min(1.0, plan.interval_wall / 2),
            policy=RetryPolicy(attempts=3, timeout=15),
        )
        history = QueueHistory(
            window=plan.window,
            sample_interval=plan.interval_wall,
            max_limit=SITE_MAX_LIMIT,
            time_scale=plan.k,
        )
        service = DecisionService(history, plan.interval_wall, journal=out.journal)
        (workdir / "state").mkdir(mode=0o700, exist_ok=True)
        store = ChainStore(workdir / "state")
        driver = ChainDriver(
            store, client, service, decision_interval=plan.interval_wall, poll_age=0.5
        )
        script = workdir / "segment.sh"
        script.write_text(f"#!/bin/sh\nsleep {plan.sleep_wall:g}\n")
        t0 = time.time()
        loader = threading.Thread(target=_submit_load, args=(client, load, t0, stop), daemon=True)
        loader.start()
        pending = sorted(enumerate(plan.starts_wall), key=lambda x: x[1])
        ids: dict[tuple[str, int], str] = {}
        args = ["-t", str(plan.limit_min), "-n", str(plan.units), "-o", "/dev/null"]
        total = len(plan.starts_wall) * len(plan.policies) * plan.segments
        bar = tqdm(total=total, desc="live: segments ended", unit="seg", disable=not progress)
        while pending or any(store.chain(c).status == ACTIVE for c in ids.values()):
            now = time.time() - t0
            while pending and pending[0][1] <= now:
                i, _ = pending.pop(0)
                for spec in plan.policies:
                    c = store.create_chain(
                        str(script), str(workdir), plan.segments, spec, False, args, "check"
                    )
                    ids[(spec, i)] = c.id
            if history.due():
                service.sample(client)
            for cid in ids.values():
                try:
                    driver.tick(cid)
                except SlurmError as e:
                    print(f"chain {cid}: {e}", file=sys.stderr)
            bar.n = sum(1 for c in ids.values() for s in store.segments(c) if s.status == "ended")
            bar.refresh()
            time.sleep(min(0.5, plan.interval_wall / 2))
        bar.close()
        for key, cid in ids.items():
            segs = store.segments(cid)
            out.gaps[key] = [float(s.gap) for s in segs if s.gap is not None]
            out.presubmitted[key] = sum(1 for s in segs if s.how in ("policy", "afterany"))
        store.close()
    finally:
        stop.set()
        cluster.stop()
    return out


def simulate(
    plan: Plan, trace: Trace, slurm_conf: Path, spec: str, seed: int = 0
) -> dict[int, float]:
    """The first gap of a chain at each start, in the simulator (wall seconds)."""
    cfg = SlurmConfig.from_file(slurm_conf)
    iv = plan.interval_wall
    end = float(trace.submit.max()) + 4 * plan.limit_min * 60.0 if len(trace) else 1.0

    def iso(t: float) -> str:
        return datetime.fromtimestamp(trace.start_epoch + t, UTC).isoformat()

    whole = (iso(0.0), iso(end))
    world = ChainWorld(
        replace(trace, source="compressed"),
        total_units=plan.cpus,
        max_limit=SITE_MAX_LIMIT,
        window=plan.window,
        sample_interval=iv,
        grid=iv * 24,
        until=end,
        splits={"train": whole, "validation": whole, "test": whole},
        make_simulator=lambda tr, u, s: Simulator(tr, cfg, total_units=u, seed=s),
        seed=seed,
        time_scale=plan.k,
    )
    policy, _ = resolve_policy(spec)
    u = plan.units
    chain = ResolvedChain(
        units=u, limit=plan.limit_min * 60.0, runtime=plan.sleep_wall, succ_units=u
    )
    gaps = {}
    for i, t in enumerate(plan.starts_wall):
        try:
            ep = ChainEpisode(world, chain, t, decision_interval=iv)
            gaps[i] = float(play(ep, policy).gap)
        except EpisodeError as e:
            print(f"simulated chain {i} ({spec}): {e}", file=sys.stderr)
    return gaps


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="mirage live-check", description=__doc__.split("\n\n")[0])
    p.add_argument("trace", type=Path)
    p.add_argument("--start", required=True, help="slice start: ISO date/time (UTC) or DAYS")
    p.add_argument("--hours", type=float, default=48.0, help="slice length, site hours")
    p.add_argument("--k", type=float, default=240.0, help="compression factor")
    p.add_argument("--cpus", type=int, default=0, help="local CPUs (default: site's nodes)")
    p.add_argument("--policies", default="default,reactive,average")
    p.add_argument("--chains", type=int, default=6, help="chain starts over the slice")
    p.add_argument("--chain-hours", type=float, default=48.0, help="segment limit, site h")
    p.add_argument("--seed", type=int, default=0, help="simulator seed")
    return p.parse_args(argv)


def _slice_start(trace: Trace, text: str) -> float:
    try:
        return float(text) * 86400.0
    except ValueError:
        pass
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp() - trace.start_epoch


def _fmt(values: list[float]) -> str:
    return f"{statistics.mean(values):.1f}" if values else "-"


@dataclass
class Check:
    """Everything one check produced."""

    plan: Plan
    live: LiveRun
    sim: dict[str, dict[int, float]]
    audit: AuditResult


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = missing_programs()
    if missing:
        print(f"mirage live-check: needs Slurm and munge; missing: {', '.join(missing)}")
        return 1
    check = run(args)
    return report(check.plan, check.live, check.sim, check.audit)


def run(args: argparse.Namespace, progress: bool = True) -> Check:
    """The whole check for parsed arguments (see :func:`parse_args`)."""
    trace = read_trace(args.trace)
    site_units = stored_units(trace) or trace.total_units or int(trace.units.max())
    t0 = _slice_start(trace, args.start)
    k = args.k
    slice_ = compress(trace, t0, args.hours * 3600.0, k, args.cpus or site_units, site_units)
    # the simulator gets the limits real Slurm keeps: whole minutes
    slice_ = replace(slice_, limit=np.ceil(slice_.limit / 60.0) * 60.0)
    span_wall = args.hours * 3600.0 / k
    # chain starts spread over the slice, leaving room for a chain to finish in it
    starts = tuple(span_wall * (i + 0.5) / args.chains * 0.8 for i in range(args.chains))
    policies = tuple(p.strip() for p in args.policies.split(",") if p.strip())
    window = WINDOW
    for spec in policies:
        shape = getattr(resolve_policy(spec)[0], "obs_shape", None)
        if shape is not None:
            window = shape[0] - 1
    plan = Plan(
        k=k,
        cpus=args.cpus or site_units,
        site_units=site_units,
        chain_limit=args.chain_hours * 3600.0,
        policies=policies,
        starts_wall=starts,
        window=window,
    )
    _, floors = scaled_scheduler(k)
    print(
        f"{args.trace}: {len(slice_)} jobs in {args.hours:g} h from t={t0 / 86400:.2f} d, "
        f"compressed {k:g}x to {span_wall / 60:.1f} min on {plan.cpus} CPUs; segments "
        f"{plan.limit_min} min (site {args.chain_hours:g} h); samples and decisions every "
        f"{plan.interval_wall:g} s (site {SAMPLE_INTERVAL:g} s, {DECISION_INTERVAL:g} s)"
    )
    for line in floors:
        print(f"  not scaled: {line}")
    workdir = Path(tempfile.mkdtemp(prefix="mlive-", dir="/tmp"))
    try:
        live = run_live(plan, workload_of(slice_), workdir, progress)
        conf = workdir / "slurm.conf"
        conf.write_text(live.slurm_conf)
        sim = {spec: simulate(plan, slice_, conf, spec, args.seed) for spec in policies}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    checked = audit(
        live.journal,
        max_limit=SITE_MAX_LIMIT,
        window=plan.window,
        sample_interval=plan.interval_wall,
        decision_interval=plan.interval_wall,
        time_scale=k,
    )
    return Check(plan, live, sim, checked)


def report(
    plan: Plan, live: LiveRun, sim: dict[str, dict[int, float]], checked: AuditResult
) -> int:
    """The side-by-side table and the RESULT line."""
    print(
        f"\n{'policy':10} {'start':>5} {'live gap s':>10} {'sim gap s':>9} "
        f"{'|diff| s':>8} {'|diff| site h':>13} {'pre-submitted':>13}"
    )
    diffs: dict[str, list[float]] = {}
    interruption: dict[str, list[float]] = {}
    for (spec, i), gaps in sorted(live.gaps.items()):
        first = gaps[0] if gaps else math.nan
        simulated = sim.get(spec, {}).get(i, math.nan)
        d = abs(first - simulated)
        if math.isfinite(d):
            diffs.setdefault(spec, []).append(d)
        interruption.setdefault(spec, []).extend(max(g, 0.0) for g in gaps)
        print(
            f"{spec:10} {i:>5} {first:>10.1f} {simulated:>9.1f} {d:>8.1f} "
            f"{d * plan.k / 3600:>13.2f} {live.presubmitted.get((spec, i), 0):>13}"
        )
    print(
        f"\naudit: {checked.decisions} live decisions replayed offline, "
        f"{len(checked.mismatches)} differ"
        + (
            f"; {checked.replaced} made by a model file replaced since, not replayed"
            if checked.replaced
            else ""
        )
    )
    parts = []
    base = statistics.mean(interruption["reactive"]) if interruption.get("reactive") else math.nan
    for spec, values in interruption.items():
        mean = statistics.mean(values) if values else math.nan
        med = statistics.median(diffs[spec]) if diffs.get(spec) else math.nan
        ratio = base / mean if mean else math.inf
        print(
            f"{spec:10} mean interruption {mean:7.1f} s (site {mean * plan.k / 3600:.2f} h); "
            f"reactive / it {ratio:.2f}x; live vs simulated median |diff| {med:.1f} s "
            f"(site {med * plan.k / 3600:.2f} h)"
        )
        key = spec.replace(" ", "_").replace("/", "_")
        parts.append(f"{key}_interruption_s={mean:.1f} {key}_vs_reactive={ratio:.2f}")
        parts.append(f"{key}_live_sim_median_abs_diff_s={med:.1f}")
    print(
        f"RESULT k={plan.k:g} chains={len(plan.starts_wall)} {' '.join(parts)} "
        f"audit_decisions={checked.decisions} audit_mismatches={len(checked.mismatches)}"
    )
    return 0 if checked.agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
