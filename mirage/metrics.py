"""Prometheus metrics of Mirage's live side (prefix ``mirage_``), on one registry.

Label sets are bounded: policies are the configured ones, actions and submission kinds are
fixed sets, Slurm commands are the five client programs.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Gap buckets (s): from seconds (test clusters) to two days (production queues).
GAP_BUCKETS = (
    1,
    5,
    15,
    30,
    60,
    120,
    300,
    600,
    1800,
    3600,
    3 * 3600,
    6 * 3600,
    12 * 3600,
    86400,
    2 * 86400,
)
SLURM_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics:
    """The daemon's (or a watcher's) metrics; tests pass a fresh ``CollectorRegistry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.active_chains = Gauge("mirage_active_chains", "Chains being driven now", registry=r)
        self.decisions = Counter(
            "mirage_decisions_total", "Policy decisions made", ["policy", "action"], registry=r
        )
        self.outside_support = Counter(
            "mirage_decisions_outside_support_total",
            "Decisions where a feature lay outside the model's training range (it waited)",
            ["policy"],
            registry=r,
        )
        self.submissions = Counter(
            "mirage_submissions_total",
            "Segments submitted (first, policy: pre-submitted, afterany, forced: at the end)",
            ["how"],
            registry=r,
        )
        self.chains_finished = Counter(
            "mirage_chains_finished_total", "Chains that stopped", ["status"], registry=r
        )
        self.interruption = Histogram(
            "mirage_interruption_seconds",
            "Realised interruption: successor start - predecessor end, when > 0",
            buckets=GAP_BUCKETS,
            registry=r,
        )
        self.overlap = Histogram(
            "mirage_overlap_seconds",
            "Realised overlap: predecessor end - successor start, when > 0",
            buckets=GAP_BUCKETS,
            registry=r,
        )
        self.slurm_latency = Histogram(
            "mirage_slurm_query_seconds",
            "Duration of Slurm commands",
            ["command"],
            buckets=SLURM_BUCKETS,
            registry=r,
        )
        self.slurm_errors = Counter(
            "mirage_slurm_errors_total",
            "Slurm commands that failed or timed out",
            ["command"],
            registry=r,
        )
        self.samples = Counter("mirage_queue_samples_total", "Queue samples taken", registry=r)
        self.sample_errors = Counter(
            "mirage_queue_sample_errors_total", "Queue samples that failed", registry=r
        )
        self.history_samples = Gauge(
            "mirage_history_samples", "Samples in the persisted queue history", registry=r
        )
        self.last_sample = Gauge(
            "mirage_last_sample_timestamp_seconds",
            "Unix time of the newest queue sample",
            registry=r,
        )
        self.reloads = Counter(
            "mirage_config_reloads_total", "Configuration reloads", ["result"], registry=r
        )

    def count_decision(self, policy: str, action: str, outside_support: bool = False) -> None:
        """One policy decision (and whether the model was outside its training support)."""
        self.decisions.labels(policy, action).inc()
        if outside_support:
            self.outside_support.labels(policy).inc()

    def observe_gap(self, gap: float) -> None:
        """One successor's realised gap (s): > 0 interruption, < 0 overlap."""
        if gap >= 0:
            self.interruption.observe(gap)
        else:
            self.overlap.observe(-gap)

    def timed_run(self, run: Callable[..., Any] = subprocess.run) -> Callable[..., Any]:
        """A ``subprocess.run`` for :class:`hpcbase.slurm.CommandRunner` that records each
        Slurm command's duration and failures."""
        known = {"sbatch", "squeue", "scontrol", "scancel", "sacct"}

        def timed(argv: list[str], **kwargs: Any) -> Any:
            prog = argv[0].rsplit("/", 1)[-1]
            label = prog if prog in known else "other"
            t0 = time.perf_counter()
            try:
                proc = run(argv, **kwargs)
            except BaseException:
                self.slurm_errors.labels(label).inc()
                raise
            finally:
                self.slurm_latency.labels(label).observe(time.perf_counter() - t0)
            if getattr(proc, "returncode", 0) != 0:
                self.slurm_errors.labels(label).inc()
            return proc

        return timed
