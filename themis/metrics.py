"""Prometheus metrics of the Themis daemon (prefix ``themis_``), with finished jobs expired.

Per-job series carry ``slurm_job``, ``user`` and ``group`` labels (the group is the top policy
class of group-user-size-fair; not ``job``, which Prometheus sets to the scrape target's name). A
job with no open file and no I/O for ``job_ttl`` seconds is finished: its series are removed so the
label sets stay bounded, and the caller drops its scheduler state.

The I/O counters (bytes, operations, queue wait) are read at scrape time: from the compiled data
path's per-job counters (``io_source``) plus what the Python data path recorded.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from hpcbase.httpserve import serve_metrics
from themis.sched.scheduler import SchedStats
from themis.sched.tags import JobTag

log = logging.getLogger(__name__)

JOB_LABELS = ("slurm_job", "user", "group")


@dataclass
class IOTotals:
    """A job's I/O so far: bytes and requests by direction, seconds waited for turns."""

    read_bytes: int = 0
    write_bytes: int = 0
    reads: int = 0
    writes: int = 0
    wait_seconds: float = 0.0

    def __add__(self, other: IOTotals) -> IOTotals:
        return IOTotals(
            self.read_bytes + other.read_bytes,
            self.write_bytes + other.write_bytes,
            self.reads + other.reads,
            self.writes + other.writes,
            self.wait_seconds + other.wait_seconds,
        )


IOSource = Callable[[], dict[str, IOTotals]]  # job id -> totals, read at scrape time


@dataclass
class _Job:
    tag: JobTag
    open_files: int = 0
    last_seen: float = 0.0
    io: IOTotals = field(default_factory=IOTotals)  # what the Python data path recorded


class _IOCollector(Collector):
    """themis_io_bytes/operations/queue_wait_seconds, computed when scraped."""

    def __init__(self, metrics: ThemisMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[CounterMetricFamily]:
        labels = [*JOB_LABELS, "op"]
        nbytes = CounterMetricFamily(
            "themis_io_bytes", "Bytes read or written, by job", None, labels
        )
        ops = CounterMetricFamily(
            "themis_io_operations", "Read or write requests, by job", None, labels
        )
        wait = CounterMetricFamily(
            "themis_io_queue_wait_seconds",
            "Seconds the job's chunks waited for their fair turn",
            None,
            list(JOB_LABELS),
        )
        for tag, t in self.metrics.io_totals():
            job = [tag.job_id, tag.user, tag.group]
            for op, n, count in (
                ("read", t.read_bytes, t.reads),
                ("write", t.write_bytes, t.writes),
            ):
                if count:  # a series appears with the job's first request of its kind
                    nbytes.add_metric([*job, op], n)
                    ops.add_metric([*job, op], count)
            if t.reads or t.writes:
                wait.add_metric(job, t.wait_seconds)
        yield from (nbytes, ops, wait)


class ThemisMetrics:
    """See the module docstring. Not thread-safe: call from the daemon's event loop."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        job_ttl: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.job_ttl = job_ttl
        self.clock = clock
        self._jobs: dict[str, _Job] = {}
        self.io_source: IOSource | None = None
        r = self.registry
        r.register(_IOCollector(self))
        self.open_files = Gauge(
            "themis_job_open_files", "Files the job holds open", JOB_LABELS, registry=r
        )
        self.target = Gauge(
            "themis_job_target_share_ratio",
            "The policy's share for the job among competing jobs",
            JOB_LABELS,
            registry=r,
        )
        self.achieved = Gauge(
            "themis_job_achieved_share_ratio",
            "The job's share of bytes over the recent dispatch window",
            JOB_LABELS,
            registry=r,
        )
        self.queued_bytes = Gauge(
            "themis_job_queued_bytes", "Bytes the job has waiting", JOB_LABELS, registry=r
        )
        self.nodes = Gauge(
            "themis_job_nodes", "The job's node count as the policy uses it", JOB_LABELS, registry=r
        )
        self.queue_depth = Gauge("themis_queue_depth", "Chunks waiting for dispatch", registry=r)
        self.inflight = Gauge(
            "themis_inflight_chunks", "Chunks running against the backing store", registry=r
        )
        self.jobs = Gauge("themis_jobs", "Jobs known to the daemon (not yet expired)", registry=r)
        self.policy = Gauge(
            "themis_policy_info",
            "The active policy and dispatcher",
            ["policy", "dispatcher"],
            registry=r,
        )
        self.reloads = Counter(
            "themis_reloads", "Configuration reloads (SIGHUP), by outcome", ["outcome"], registry=r
        )
        self.expired = Counter(
            "themis_jobs_expired", "Jobs whose series were removed after the TTL", registry=r
        )
        self.backing = Gauge(
            "themis_backing_available",
            "1 while the backing directory exists, 0 while it is gone",
            registry=r,
        )
        self.backing.set(1)
        self._policy_labels: tuple[str, str] | None = None

    # -- events ----------------------------------------------------------------------------
    def _job(self, tag: JobTag) -> _Job:
        job = self._jobs.get(tag.job_id)
        if job is None:
            job = self._jobs[tag.job_id] = _Job(tag)
            self.jobs.set(len(self._jobs))
        job.last_seen = self.clock()
        return job

    @staticmethod
    def _labels(tag: JobTag) -> tuple[str, str, str]:
        return tag.job_id, tag.user, tag.group

    def file_opened(self, tag: JobTag) -> None:
        job = self._job(tag)
        job.open_files += 1
        self.open_files.labels(*self._labels(job.tag)).set(job.open_files)
        self.nodes.labels(*self._labels(job.tag)).set(job.tag.nodes)

    def file_closed(self, tag: JobTag) -> None:
        job = self._job(tag)
        job.open_files = max(0, job.open_files - 1)
        self.open_files.labels(*self._labels(job.tag)).set(job.open_files)

    def record(self, tag: JobTag, op: str, nbytes: int, wait: float = 0.0) -> None:
        """One finished read or write request of ``nbytes`` (the Python data path)."""
        io = self._job(tag).io
        if op == "read":
            io.read_bytes += nbytes
            io.reads += 1
        else:
            io.write_bytes += nbytes
            io.writes += 1
        io.wait_seconds += wait

    def io_totals(self) -> list[tuple[JobTag, IOTotals]]:
        """Every live job's I/O so far (any thread: the scrape reads it)."""
        compiled = self.io_source() if self.io_source is not None else {}
        empty = IOTotals()
        return [
            (job.tag, job.io + compiled.get(jid, empty)) for jid, job in list(self._jobs.items())
        ]

    def reloaded(self, ok: bool) -> None:
        self.reloads.labels("ok" if ok else "error").inc()

    def update(self, stats: SchedStats) -> None:
        """Copy the scheduler's queue depth and per-job shares into the gauges."""
        if self._policy_labels != (stats.policy, stats.dispatcher):
            if self._policy_labels is not None:
                self.policy.remove(*self._policy_labels)
            self._policy_labels = (stats.policy, stats.dispatcher)
            self.policy.labels(*self._policy_labels).set(1)
        self.queue_depth.set(stats.queued_chunks)
        self.inflight.set(stats.inflight)
        for job_id, js in stats.jobs.items():
            job = self._jobs.get(job_id)
            if job is None:
                continue
            labels = self._labels(job.tag)
            self.target.labels(*labels).set(js.target_share)
            self.achieved.labels(*labels).set(js.achieved_share)
            self.queued_bytes.labels(*labels).set(js.queued_bytes)
            if js.queued_chunks or js.inflight:
                job.last_seen = self.clock()

    def expire(self) -> list[str]:
        """Remove the series of jobs idle past the TTL with no open file; returns their ids."""
        now = self.clock()
        gone = [
            jid
            for jid, job in self._jobs.items()
            if job.open_files == 0 and now - job.last_seen >= self.job_ttl
        ]
        for jid in gone:
            labels = self._labels(self._jobs.pop(jid).tag)
            for gauge in (
                self.open_files,
                self.target,
                self.achieved,
                self.queued_bytes,
                self.nodes,
            ):
                _remove(gauge, labels)
            self.expired.inc()
        if gone:
            self.jobs.set(len(self._jobs))
            log.info("expired %d finished job(s): %s", len(gone), ", ".join(gone[:10]))
        return gone

    def serve(self, port: int, address: str = "127.0.0.1") -> Callable[[], None]:
        """Serve /metrics over HTTP in a background thread, bounded against idle or slow
        clients (hpcbase.httpserve); returns a function that stops it."""
        return serve_metrics(self.registry, port, address)[1]


def _remove(metric: Gauge, labels: tuple[str, ...]) -> None:
    with contextlib.suppress(KeyError):
        metric.remove(*labels)
