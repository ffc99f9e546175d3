"""Run specs (``POLICY[:DISPATCHER][+nosync]``) and running a scenario under several of them."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from themis.iosim.engine import IOSim
from themis.iosim.metrics import RunMetrics, alone_rates, analyze, lifetime
from themis.iosim.model import IOJob, ServerSpec
from themis.sched import DISPATCHERS, POLICIES, Policy

DEFAULT_RUNS = (
    "fifo",
    "job-fair:tbf",
    "size-fair:gift",
    "job-fair",
    "size-fair",
    "user-fair",
    "size-fair:sfq",
)


@dataclass(frozen=True)
class RunSpec:
    policy: str
    dispatcher: str = "lottery"
    sync: bool = True

    @property
    def label(self) -> str:
        if self.policy == "fifo":
            return "fifo"
        return f"{self.policy}:{self.dispatcher}" + ("" if self.sync else "+nosync")

    @classmethod
    def parse(cls, text: str) -> RunSpec:
        """``size-fair``, ``job-fair:sfq``, ``job-fair:tbf``, ``size-fair:lottery+nosync``..."""
        body, _, flag = text.strip().partition("+")
        if flag not in ("", "nosync"):
            raise ValueError(f"run {text!r}: unknown flag '+{flag}' (only +nosync)")
        policy, _, disp = body.partition(":")
        if policy not in POLICIES:
            raise ValueError(
                f"run {text!r}: unknown policy {policy!r}; choose from {', '.join(POLICIES)}"
            )
        disp = disp or ("fifo" if policy == "fifo" else "lottery")
        if disp not in DISPATCHERS:
            raise ValueError(
                f"run {text!r}: unknown dispatcher {disp!r}; choose from {', '.join(DISPATCHERS)}"
            )
        return cls(policy, disp, flag != "nosync")


def server_load(jobs: Sequence[IOJob], servers: ServerSpec, duration: float) -> float:
    """Average number of jobs per server over the run (for a static TBF per-job rate)."""
    load = 0.0
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
        load += k / servers.count * lifetime(job, duration) / duration
    return max(1.0, load)


def run_scenario(
    name: str,
    jobs: Sequence[IOJob],
    servers: ServerSpec,
    specs: Sequence[RunSpec],
    *,
    duration: float,
    seed: int = 0,
    delta: float = 0.01,
    window: float = 0.05,
    tbf_rate: float | None = None,
    with_alone: bool = True,
    progress: Callable[[str, float], None] | None = None,
) -> list[RunMetrics]:
    """Simulate ``jobs`` once per run spec; returns the figures of each."""
    jobs = list(jobs)
    alone = alone_rates(jobs, servers, duration, seed) if with_alone else None
    rate = tbf_rate or servers.bandwidth / server_load(jobs, servers, duration)
    out = []
    for spec in specs:
        opts: dict[str, float] = {}
        if spec.dispatcher == "tbf":
            opts = {"rate": rate}
        elif spec.dispatcher == "gift":
            opts = {"capacity": servers.bandwidth}
        sim = IOSim(
            jobs,
            servers,
            spec.policy,
            spec.dispatcher,
            seed=seed,
            delta=delta if spec.sync else None,
            window=window,
            dispatcher_options=opts,
        )
        cb = (lambda t, label=spec.label: progress(label, t)) if progress else None
        res = sim.run(duration, progress=cb)
        m = analyze(res, Policy.from_name(spec.policy), scenario=name, run=spec.label, alone=alone)
        out.append(m)
    return out


def fmt_shares(m: RunMetrics, what: str = "share", limit: int = 4) -> str:
    """``job=share`` for the first jobs, or for the jobs with the largest targets in a mix."""
    jobs = (
        m.jobs
        if len(m.jobs) <= limit
        else sorted(m.jobs, key=lambda j: -(0.0 if math.isnan(j.target) else j.target))
    )
    vals = [(j.job_id, getattr(j, what)) for j in jobs if not math.isnan(getattr(j, what))]
    text = " ".join(f"{k}={v:.2f}" for k, v in vals[:limit])
    return text + (" ..." if len(vals) > limit else "")
