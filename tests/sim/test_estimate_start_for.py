"""``Simulator.estimate_start_for`` against the probe it replaces (snapshot, submit,
``estimate_start``, restore) at many points of generated workloads: FIFO and multifactor
priority (age, fair-share, size), submissions scheduled at once or delayed, partitions with
tiers and MaxTime, node pools (node- and CPU-counted) and QOS limits."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from hpcbase.jobs import JobSpec, JobState
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.generate import generate
from sim.limits import QosLimits

MULTI = (
    "PriorityType=priority/multifactor\nPriorityWeightAge=1000\nPriorityWeightFairshare=5000\n"
    "PriorityWeightJobSize=300\nAccountingStorageType=accounting_storage/slurmdbd\n"
)
NOW = "SchedulerParameters=batch_sched_delay=0\n"
POOLS = (
    "NodeName=n[1-12]\nPartitionName=a Nodes=n[1-8] Default=YES\nPartitionName=b Nodes=n[5-12]\n"
)
CPU_POOLS = (
    "NodeName=c[1-4] CPUs=8\nSelectTypeParameters=CR_CPU\n"
    "PartitionName=a Nodes=c[1-3] Default=YES\nPartitionName=b Nodes=c[3-4]\n"
)
TIERS = (
    "PartitionName=lo Default=YES PriorityTier=1 MaxTime=10:00:00\n"
    "PartitionName=hi PriorityTier=2 PriorityJobFactor=3\n"
)

# name: (config, units, total units, partitions of the trace's jobs, QOS limits)
CASES: dict[str, tuple[SlurmConfig, str, int, tuple[str, ...], QosLimits | None]] = {
    "fifo": (SlurmConfig(), "nodes", 12, (), None),
    "multifactor-at-once": (SlurmConfig.from_text(MULTI + NOW), "nodes", 12, (), None),
    "multifactor-delayed": (SlurmConfig.from_text(MULTI), "nodes", 12, (), None),
    "tiers-maxtime": (SlurmConfig.from_text(MULTI + NOW + TIERS), "nodes", 12, ("lo", "hi"), None),
    "pools": (SlurmConfig.from_text(MULTI + NOW + POOLS), "nodes", 12, ("a", "b"), None),
    "cpu-pools": (SlurmConfig.from_text(MULTI + CPU_POOLS), "cpus", 32, ("a", "b"), None),
    "limits": (
        SlurmConfig.from_text(MULTI + NOW),
        "nodes",
        12,
        (),
        QosLimits(max_jobs_per_user=3, max_nodes_per_user=8),
    ),
}


def probe(sim: Simulator, spec: JobSpec) -> tuple[float | None, str, int]:
    """The old probe, as mirage/envs/episode.py ran it: the estimate, whether the job
    started at once, and how many other jobs its submission started."""
    saved = sim.snapshot()
    try:
        running = len(sim.state.running)
        jid = sim.submit(spec)
        view = sim.job(jid)
        now = view.state != JobState.PENDING
        others = len(sim.state.running) - running - int(now)
        if now:
            return float(view.start), "now", others
        est = sim.estimate_start(jid)
        return (None if est is None else float(est)), "none" if est is None else "est", others
    finally:
        sim.restore(saved)


@pytest.mark.parametrize("case", list(CASES))
def test_estimate_start_for_equals_the_probe(case, monkeypatch):
    cfg, unit, total, parts, limits = CASES[case]
    tr = generate(400, total, seed=11, load=1.1)
    tr = replace(tr, unit=unit, total_units=total, user=tr.user % 6)
    if parts:
        tr = replace(tr, partitions=[parts[i % 3 == 0] for i in range(len(tr))])
    sim = Simulator(tr, cfg, limits=limits)
    fallbacks = Counter[str]()
    real = Simulator._estimate_by_probe

    def counted(self: Simulator, spec: JobSpec) -> float | None:
        fallbacks["probe"] += 1
        return real(self, spec)

    monkeypatch.setattr(Simulator, "_estimate_by_probe", counted)
    rng = np.random.default_rng(3)
    kinds = Counter[str]()
    points = 0
    horizon = float(tr.submit[len(tr) // 2])
    t = 0.0
    while t < horizon:
        t += float(rng.choice([30.0, 60.0, 17.0, 300.0, 1.0]))
        sim.advance(t)
        if rng.random() < 0.04 and sim.state.running:
            # units freed with no scheduling pass: the probe's own pass starts other jobs
            sim.cancel(int(rng.choice(sorted(sim.state.running))))
        if rng.random() < 0.05 and sim.state.order:
            # a job waiting on a pending one: its start makes the waiter eligible
            target = sim.state.order[int(rng.integers(0, len(sim.state.order)))].id
            part = {"partition": parts[0]} if parts else {}
            dep = JobSpec(units=1, limit=600, runtime=300, dependency=f"after:{target}", **part)
            if limits is None or limits.max_jobs_per_user is None:
                sim.submit(dep)
        for _ in range(2):
            limit = float(rng.choice([600.0, 3600.0, 8 * 3600.0, 11 * 3600.0]))
            spec = JobSpec(
                units=int(rng.choice([1, 2, total // 4, total // 2])),
                limit=limit,
                runtime=limit / 2,
                user=int(rng.integers(0, 8)),  # users 6, 7: new to fair-share
                name="probe",
                partition=str(rng.choice(parts)) if parts else "",
            )
            before = sim.snapshot(), len(sim.records)
            got = sim.estimate_start_for(spec)
            assert (sim.snapshot(), len(sim.records)) == before, "the state changed"
            want, kind, others = probe(sim, spec)
            assert got == want, (case, t, spec, got, want)
            assert got is None or type(got) is float
            kinds[kind] += 1
            kinds["others started"] += others > 0
            points += 1
    assert points >= 300
    assert kinds["est"] >= 100, kinds
    if cfg.batch_sched_delay <= 0:  # the submission's main pass runs at once
        assert kinds["now"] >= 10, kinds
    # only where the submission starts other jobs on node pools or jobs with waiters
    assert fallbacks["probe"] <= kinds["others started"], (fallbacks, kinds)
    if cfg.batch_sched_delay <= 0:
        assert kinds["others started"] >= 5, kinds
    if case == "tiers-maxtime":
        assert kinds["none"] >= 10  # jobs over lo's MaxTime never become eligible
    print(case, points, dict(kinds), dict(fallbacks))


def test_estimate_start_for_of_a_running_or_invalid_job_raises_as_submit_does():
    sim = Simulator(None, SlurmConfig(), total_units=4)
    with pytest.raises(ValueError, match="asks for 5 units"):
        sim.estimate_start_for(JobSpec(units=5, limit=60, runtime=10))
    jid = sim.submit(JobSpec(units=1, limit=60, runtime=10))
    with pytest.raises(ValueError, match="already exists"):
        sim.estimate_start_for(JobSpec(units=1, limit=60, runtime=10, job_id=jid))
    spec = JobSpec(units=4, limit=60, runtime=10)
    assert sim.estimate_start_for(spec) == probe(sim, spec)[0] == 60.0
