"""Workloads: ThemisIO's microbenchmarks and job mixes from (job, user, group, nodes, start,
end) rows with an I/O profile assigned to each job."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass

from themis.iosim.model import IOJob, IOProfile, KiB, MiB
from themis.sched import JobTag

STEADY = IOProfile("dataload", req_bytes=1 * MiB, depth=4, procs_per_node=4)


@dataclass(frozen=True)
class Scenario:
    """A named workload."""

    name: str
    jobs: tuple[IOJob, ...]
    about: str


def size_micro() -> Scenario:
    """A 1-node job against a 4-node job, both reading continuously (ThemisIO Fig. size-fair)."""
    jobs = (
        IOJob(JobTag("small", "alice", "physics", 1), STEADY),
        IOJob(JobTag("large", "bob", "physics", 4), STEADY),
    )
    return Scenario("size", jobs, "1-node vs 4-node job, continuous 1 MiB reads")


def user_micro() -> Scenario:
    """User alice runs two jobs, user bob one; all equal size and continuously reading."""
    jobs = (
        IOJob(JobTag("alice-1", "alice", "physics", 2), STEADY),
        IOJob(JobTag("alice-2", "alice", "physics", 2), STEADY),
        IOJob(JobTag("bob-1", "bob", "chemistry", 2), STEADY),
    )
    return Scenario("user", jobs, "user with two jobs vs user with one (2 nodes each)")


def burst_micro() -> Scenario:
    """A steady 1-node reader against a 4-node job writing bulk-synchronous checkpoints."""
    ckpt = IOProfile(
        "checkpoint",
        req_bytes=1 * MiB,
        depth=4,
        procs_per_node=8,
        burst_bytes=32 * MiB,
        period=0.15,
    )
    jobs = (
        IOJob(JobTag("reader", "alice", "physics", 1), STEADY),
        IOJob(JobTag("ckpt", "bob", "physics", 4), ckpt),
    )
    return Scenario("burst", jobs, "steady reader vs bursty 4-node checkpointer")


def global_micro() -> Scenario:
    """Two equal jobs on overlapping server sets (a: 0-3, b: 1-3): only the per-delta usage
    exchange brings them to 1:1 globally."""
    jobs = (
        IOJob(JobTag("wide", "alice", "physics", 2), STEADY, servers=(0, 1, 2, 3)),
        IOJob(JobTag("narrow", "bob", "physics", 2), STEADY, servers=(1, 2, 3)),
    )
    return Scenario("global", jobs, "jobs on servers 0-3 vs 1-3: global fairness needs sync")


MICRO = {"size": size_micro, "user": user_micro, "burst": burst_micro, "global": global_micro}


# -- job mixes --------------------------------------------------------------------------------
@dataclass(frozen=True)
class MixRow:
    """One job of a mix, as a scheduler replay gives it (times in trace seconds)."""

    job_id: str
    user: str
    group: str
    nodes: int
    start: float
    end: float


def assign_profile(row: MixRow, rng: random.Random) -> IOProfile:
    """A plausible I/O profile: 50 % checkpointers, 35 % data loaders, 15 % metadata-heavy."""
    u = rng.random()
    stripe = rng.choice((1, 2, 4, 8))
    if u < 0.5:
        return IOProfile(
            "checkpoint",
            req_bytes=1 * MiB,
            depth=2,
            procs_per_node=2,
            burst_bytes=rng.choice((8, 16, 32)) * MiB,
            period=rng.uniform(0.05, 0.5),
            stripe_count=stripe,
        )
    if u < 0.85:
        return IOProfile(
            "dataload",
            req_bytes=rng.choice((64 * KiB, 256 * KiB, 1 * MiB)),
            depth=2,
            procs_per_node=1,
            think=rng.choice((0.0, 0.001, 0.005)),
            stripe_count=stripe,
        )
    return IOProfile(
        "metadata",
        depth=4,
        procs_per_node=1,
        burst_ops=rng.choice((64, 256)),
        period=rng.uniform(0.02, 0.2),
        stripe_count=stripe,
    )


def mix_from_rows(
    rows: Iterable[MixRow],
    *,
    time_scale: float = 1.0,
    t0: float | None = None,
    seed: int = 0,
    max_nodes: int | None = None,
) -> list[IOJob]:
    """Jobs for the simulator: trace time ``t`` maps to simulated ``(t - t0) * time_scale``
    (t0 defaults to the earliest start); each job gets a profile from ``assign_profile``
    seeded by the seed and its id, so a job keeps its profile across runs and policies."""
    rows = list(rows)
    if not rows:
        return []
    origin = min(r.start for r in rows) if t0 is None else t0
    jobs = []
    for r in rows:
        rng = random.Random(f"{seed}:{r.job_id}")
        nodes = max(1, min(r.nodes, max_nodes) if max_nodes else r.nodes)
        start = (r.start - origin) * time_scale
        end = (r.end - origin) * time_scale if math.isfinite(r.end) else math.inf
        if end <= 0:
            continue
        jobs.append(
            IOJob(
                JobTag(r.job_id, r.user, r.group, nodes),
                assign_profile(r, rng),
                start=max(0.0, start),
                end=end,
            )
        )
    return jobs


def synthetic_rows(
    n: int,
    *,
    users: int = 100,
    groups: int = 10,
    duration: float = 1.0,
    seed: int = 0,
    concurrent: bool = True,
) -> list[MixRow]:
    """``n`` jobs with log-uniform sizes (1-64 nodes); all running for the whole ``duration``
    when ``concurrent``, else with random start and end inside it."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        user = rng.randrange(users)
        nodes = int(2 ** rng.uniform(0, 6))
        if concurrent:
            start, end = 0.0, math.inf
        else:
            start = rng.uniform(0, duration * 0.8)
            end = start + rng.uniform(duration * 0.1, duration)
        rows.append(MixRow(f"j{i}", f"user{user}", f"group{user % groups}", nodes, start, end))
    return rows
