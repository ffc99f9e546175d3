"""Figures of a run: aggregate throughput, slowdown vs alone, share error, variation."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from themis.iosim.engine import IOSim, SimResult
from themis.iosim.model import IOJob, ServerSpec
from themis.sched import Policy

BUSY = 0.9  # a job "demands" in a window when it had requests outstanding this much of it


@dataclass
class JobMetrics:
    job_id: str
    user: str
    group: str
    nodes: int
    kind: str
    bytes: int
    work: int
    rate: float  # work units / s over the job's lifetime in the run
    alone_rate: float  # the same, with the job alone on its servers
    slowdown: float  # alone_rate / rate
    share: float  # achieved share while contending (windows where others demanded too)
    target: float  # the policy's target share over those windows
    cov: float  # CoV of per-window rate over windows it demanded (nan if < 3)


@dataclass
class RunMetrics:
    scenario: str
    run: str
    policy: str
    dispatcher: str
    duration: float
    throughput: float  # aggregate bytes / s
    ops_rate: float  # aggregate requests / s
    mean_slowdown: float
    max_slowdown: float
    share_error: float  # mean over contended windows of 0.5 * sum |achieved - target|
    mean_cov: float
    chunks: int
    wall_s: float
    jobs: list[JobMetrics] = field(default_factory=list)
    window: float = 0.0
    timeline: dict[str, list[float]] = field(default_factory=dict)  # work/s per window, <= 8 jobs

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def busy_fractions(intervals: list[tuple[float, float]], window: float, n: int) -> np.ndarray:
    """Fraction of each of ``n`` windows covered by disjoint, sorted intervals."""
    if not intervals:
        return np.zeros(n)
    iv = np.asarray(intervals, dtype=float)
    pts = iv.reshape(-1)
    lens = iv[:, 1] - iv[:, 0]
    cum = np.concatenate(([0.0], np.cumsum(lens)))
    vals = np.empty(pts.size)
    vals[0::2] = cum[:-1]
    vals[1::2] = cum[1:]
    edges = np.arange(n + 1) * window
    b = np.interp(edges, pts, vals, left=0.0, right=cum[-1])
    return np.clip(np.diff(b) / window, 0.0, 1.0)


def lifetime(job: IOJob, duration: float) -> float:
    return max(0.0, min(job.end, duration) - min(job.start, duration))


def alone_rates(
    jobs: list[IOJob],
    servers: ServerSpec,
    duration: float,
    seed: int = 0,
    chunk_bytes: int = 1 << 20,
) -> dict[str, float]:
    """Each job's work rate with nobody else on its servers, from one simulation in which
    every job gets private copies of as many servers as it uses."""
    solo, base = [], 0
    for job in jobs:
        k = (
            len(job.servers)
            if job.servers
            else (
                servers.count
                if job.profile.stripe_count <= 0
                else min(job.profile.stripe_count, servers.count)
            )
        )
        solo.append(replace(job, servers=tuple(range(base, base + k))))
        base += k
    spec = replace(servers, count=max(base, 1))
    res = IOSim(solo, spec, "fifo", seed=seed, delta=None, chunk_bytes=chunk_bytes).run(duration)
    return {r.job.tag.job_id: r.work / max(lifetime(r.job, duration), 1e-12) for r in res.jobs}


def analyze(
    result: SimResult,
    target: Policy,
    *,
    scenario: str = "",
    run: str = "",
    alone: dict[str, float] | None = None,
) -> RunMetrics:
    """Figures for one run; shares are judged against ``target``'s policy."""
    jr = result.jobs
    n = len(jr[0].window_work) if jr else 0
    w = result.window
    work = np.array([j.window_work for j in jr], dtype=float).reshape(len(jr), n)
    busy = np.array([busy_fractions(j.busy, w, n) for j in jr]).reshape(len(jr), n)
    demand = busy >= BUSY
    tags = [j.job.tag for j in jr]
    cache: dict[bytes, np.ndarray] = {}
    errors = []
    got = np.zeros(len(jr))
    want = np.zeros(len(jr))
    for k in range(n):
        mask = demand[:, k]
        if mask.sum() < 2:
            continue
        key = np.packbits(mask).tobytes()
        t = cache.get(key)
        if t is None:
            idx = np.flatnonzero(mask)
            shares = target.shares(tags[i] for i in idx)
            t = np.zeros(len(jr))
            t[idx] = [shares[tags[i].job_id] for i in idx]
            cache[key] = t
        col = np.where(mask, work[:, k], 0.0)
        total = col.sum()
        if total <= 0:
            continue
        errors.append(0.5 * float(np.abs(col / total - t).sum()))
        got += col
        want += t * total
    contended = got.sum()
    jobs = []
    for i, j in enumerate(jr):
        life = lifetime(j.job, result.duration)
        rate = j.work / life if life > 0 else 0.0
        a = (alone or {}).get(j.job.tag.job_id, math.nan)
        rates = work[i, demand[i]] / w
        cov = (
            float(rates.std() / rates.mean()) if rates.size >= 3 and rates.mean() > 0 else math.nan
        )
        jobs.append(
            JobMetrics(
                j.job.tag.job_id,
                j.job.tag.user,
                j.job.tag.group,
                j.job.tag.nodes,
                j.job.profile.kind,
                j.bytes,
                j.work,
                rate,
                a,
                a / rate if rate > 0 and not math.isnan(a) else math.nan,
                float(got[i] / contended) if contended else math.nan,
                float(want[i] / contended) if contended else math.nan,
                cov,
            )
        )
    slow = [m.slowdown for m in jobs if not math.isnan(m.slowdown)]
    covs = [m.cov for m in jobs if not math.isnan(m.cov)]
    dur = result.duration
    return RunMetrics(
        scenario,
        run or f"{result.policy}:{result.dispatcher}",
        result.policy,
        result.dispatcher,
        dur,
        sum(j.bytes for j in jr) / dur,
        sum(j.ops for j in jr) / dur,
        float(np.mean(slow)) if slow else math.nan,
        float(np.max(slow)) if slow else math.nan,
        float(np.mean(errors)) if errors else math.nan,
        float(np.mean(covs)) if covs else math.nan,
        result.chunks,
        result.wall_s,
        jobs,
        w,
        {j.job.tag.job_id: (work[i] / w).tolist() for i, j in enumerate(jr)}
        if len(jr) <= 8
        else {},
    )
