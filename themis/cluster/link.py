"""The daemon's side of cluster mode: a trio task that, every window, publishes this node's
usage to Redis, reads every node's, and caps this node's jobs at their global allocation.

Redis calls run in a worker thread (redis-py is blocking; pyfuse3 runs on trio) with a
deadline of one window.  When Redis is slow or gone the daemon drops every cap and schedules
by its local policy alone, logs it once and exports ``themis_cluster_connected 0``; it keeps
trying every window and rejoins as soon as an exchange succeeds.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Callable

import trio
from prometheus_client import CollectorRegistry, Counter, Gauge

from themis.cluster.control import Controller, Decision
from themis.cluster.records import RecordError, Report, decode, encode
from themis.cluster.store import LOCAL_URL, LocalStore, RedisStore, Store, StoreError
from themis.config import ClusterConfig, ConfigError, read_password_file
from themis.sched.allocation import NodeUsage
from themis.sched.dispatch import Dispatcher
from themis.sched.ratecap import RateCapDispatcher
from themis.sched.scheduler import Scheduler
from themis.sched.tags import JobTag

log = logging.getLogger("themis.cluster")

LABELS = ("slurm_job", "user", "group")  # not "job": Prometheus sets that to the target


class ClusterMetrics:
    """``themis_cluster_*`` series (per-job ones for this node's jobs only)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.connected = Gauge(
            "themis_cluster_connected",
            "1 while exchanges with Redis succeed, 0 while local-only",
            registry=r,
        )
        self.exchanges = Counter(
            "themis_cluster_exchanges", "Usage exchanges, by outcome", ["outcome"], registry=r
        )
        self.latency = Gauge(
            "themis_cluster_exchange_duration_seconds",
            "Duration of the last successful exchange",
            registry=r,
        )
        self.nodes = Gauge("themis_cluster_nodes", "Nodes whose reports are live", registry=r)
        self.capacity = Gauge(
            "themis_cluster_capacity_bytes_per_second",
            "Bandwidth shared out by the global allocation",
            registry=r,
        )
        self.measured = Gauge(
            "themis_cluster_aggregate_bytes_per_second",
            "All nodes' I/O rate over the last window",
            registry=r,
        )
        self.cap = Gauge(
            "themis_cluster_job_cap_bytes_per_second",
            "This node's cap for the job",
            LABELS,
            registry=r,
        )
        self.target = Gauge(
            "themis_cluster_job_target_share_ratio",
            "The job's global share by the allocation",
            LABELS,
            registry=r,
        )
        self.achieved = Gauge(
            "themis_cluster_job_achieved_share_ratio",
            "The job's global share of the last window",
            LABELS,
            registry=r,
        )
        self._labels: set[tuple[str, str, str]] = set()

    def jobs(self, tags: dict[str, JobTag], d: Decision) -> None:
        seen = set()
        for job_id, tag in tags.items():
            labels = (job_id, tag.user, tag.group)
            seen.add(labels)
            self.cap.labels(*labels).set(d.caps.get(job_id, 0.0))
            self.target.labels(*labels).set(d.target.get(job_id, 0.0))
            self.achieved.labels(*labels).set(d.achieved.get(job_id, 0.0))
        for labels in self._labels - seen:
            for g in (self.cap, self.target, self.achieved):
                with contextlib.suppress(KeyError):
                    g.remove(*labels)
        self._labels = seen


class ClusterLink:
    """One daemon's membership in the cluster (see the module docstring)."""

    def __init__(
        self,
        cfg: ClusterConfig,
        store: Store | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg = cfg
        self.node = cfg.node or socket.gethostname().split(".")[0]
        ttl = cfg.window_seconds * cfg.ttl_windows
        if store is None and cfg.url == LOCAL_URL:
            store = LocalStore()
        elif store is None:
            try:  # checked with the config; read again here in case it changed since
                password = read_password_file(cfg.password_file) if cfg.password_file else None
            except ValueError as exc:
                raise ConfigError(f"cluster.password_file: {exc}") from None
            store = RedisStore(
                cfg.url, cfg.key_prefix, ttl, cfg.timeout_seconds, cfg.username, password
            )
        self.store = store
        self.local = isinstance(store, LocalStore)
        self.controller = Controller(
            self.node, capacity=cfg.capacity_bytes_per_second, headroom=cfg.headroom
        )
        self.clock = clock
        self.connected: bool | None = None
        self._streak = 0  # successful exchanges in a row
        self.caps: dict[str, float] = {}
        self.decision = Decision()
        self._scheduler: Scheduler | None = None
        self._metrics: ClusterMetrics | None = None
        self._last: dict[str, tuple[int, int]] = {}  # job -> (bytes, ops) served so far
        self._sampled_at = clock()

    # -- hooks for the daemon ------------------------------------------------------------
    def wrap(self, dispatcher: Dispatcher) -> Dispatcher:
        """The dispatcher that enforces this node's caps (lottery and SFQ); others publish
        usage only."""
        if dispatcher.ordered or dispatcher.timed:
            log.warning(
                "cluster mode: the %s dispatcher takes no caps; this node publishes its "
                "usage but enforces only its local policy",
                dispatcher.name,
            )
            return dispatcher
        capped = RateCapDispatcher(dispatcher)
        capped.set_rates(self.caps, self.clock())
        return capped

    def attach(self, scheduler: Scheduler, registry: CollectorRegistry) -> None:
        self._scheduler = scheduler
        self._metrics = ClusterMetrics(registry)
        self._metrics.connected.set(0)

    # -- one window ------------------------------------------------------------------------
    def sample(self) -> Report:
        """This node's usage since the last sample."""
        sched = self._scheduler
        assert sched is not None, "attach() first"
        now = self.clock()
        seconds = max(now - self._sampled_at, 1e-3)
        self._sampled_at = now
        disp = sched.dispatcher
        held = disp.take_held() if isinstance(disp, RateCapDispatcher) else set()
        usage, last = [], {}
        for job_id, js in sched.stats().jobs.items():
            b0, o0 = self._last.get(job_id, (0, 0))
            if js.bytes_served < b0:  # the scheduler forgot and re-learned the job
                b0, o0 = 0, 0
            last[job_id] = (js.bytes_served, js.ops_served)
            nbytes, ops = js.bytes_served - b0, js.ops_served - o0
            busy = js.queued_chunks > 0 or job_id in held
            if self.local:  # nothing queues when the CPU is the bottleneck: moving data is demand
                busy = busy or nbytes > 0 or js.inflight > 0
            if nbytes or busy or js.inflight:
                tag = JobTag(job_id, js.user, js.group, js.nodes)
                usage.append(NodeUsage(tag, self.node, nbytes, ops, js.queued_bytes, seconds, busy))
        self._last = last
        return Report(self.node, time.time(), seconds, tuple(usage), dict(self.caps))

    def apply(self, decision: Decision | None) -> None:
        """Enforce a decision (None: local-only, no caps)."""
        sched = self._scheduler
        assert sched is not None
        self.decision = decision or Decision()
        self.caps = dict(self.decision.caps)
        disp = sched.dispatcher
        if isinstance(disp, RateCapDispatcher):
            disp.set_rates(self.caps, sched.clock())
        if self._metrics is not None:
            m, d = self._metrics, self.decision
            m.capacity.set(d.capacity)
            m.measured.set(d.measured)
            m.nodes.set(d.nodes)
            tags = {
                js.job_id: JobTag(js.job_id, js.user, js.group, js.nodes)
                for js in sched.stats().jobs.values()
            }
            m.jobs(tags, d)

    def _state(self, ok: bool, why: str = "") -> None:
        if ok and self.connected is not True:
            log.warning("cluster: joined through %s as node %s", self.cfg.url, self.node)
        elif not ok and self.connected is not False:
            log.error(
                "cluster: Redis at %s is slow or gone (%s): local-only scheduling until it returns",
                self.cfg.url,
                why,
            )
        self.connected = ok
        if self._metrics is not None:
            self._metrics.connected.set(1 if ok else 0)
            self._metrics.exchanges.labels("ok" if ok else "error").inc()

    async def exchange_once(self) -> bool:
        """One window's exchange; returns whether Redis answered."""
        sched = self._scheduler
        assert sched is not None
        payload = encode(self.sample())
        start = time.monotonic()
        raws: list[bytes] | None = None
        why = "no answer within one window"
        with trio.move_on_after(self.cfg.window_seconds):
            try:
                raws = await trio.to_thread.run_sync(
                    self.store.exchange, self.node, payload, abandon_on_cancel=True
                )
            except StoreError as exc:
                why = str(exc)
        if raws is None:
            self._streak = 0
            self._state(False, why)
            self.apply(None)
            return False
        reports = []
        for raw in raws:
            try:
                reports.append(decode(raw))
            except RecordError as exc:
                log.warning("cluster: ignoring a report: %s", exc)
        self._state(True)
        if self._metrics is not None:
            self._metrics.latency.set(time.monotonic() - start)
        # the first windows after (re)joining were measured without caps: do not learn from them
        self._streak += 1
        decision = self.controller.update(sched.policy, reports, learn=self._streak > 2)
        self.apply(decision)
        log.debug(
            "cluster: %d nodes, %.0f B/s measured, capacity %.0f, caps %s",
            decision.nodes,
            decision.measured,
            decision.capacity,
            decision.caps,
        )
        return True

    async def run(self) -> None:
        """Exchange every window until cancelled."""
        window = self.cfg.window_seconds
        next_at = trio.current_time() + window
        try:
            while True:
                await trio.sleep_until(next_at)
                next_at = max(next_at + window, trio.current_time())
                await self.exchange_once()
        finally:
            self.store.close()
