"""The discrete-event Slurm simulator.

Events live on one heap ordered by ``(time, kind, seq)``. At equal times the documented tie
order is: submissions (trace order, then injected jobs in call order), then eligibility
timers (``--begin``, ``after:ID+min``), then the delayed main-scheduler run for batch
submissions, then the backfill scheduler, then job ends, then the priority recalculation and
the main scheduler. The backfill pass of a second thus sees that second's submissions but not
its job ends (real Slurm's backfill loop sees a job end a pass later; the main scheduler sees
it at once). Scheduler
passes are skipped when they cannot change anything (nothing happened since the last one,
or no eligible pending job fits in the free units); the outcome is the same as running them.
Opt-in, :class:`BackfillCycle` replaces the whole-second backfill ticks with Slurm's
free-running loop, delays job ends by a completion latency and may hold every start while a
job completes (sub-second times).
"""

from __future__ import annotations

import heapq
import math
import pickle
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hpcbase.config import ConfigError
from hpcbase.jobs import JobSpec, JobState
from hpcbase.snapshot import QueueSnapshot
from sim import _backfill
from sim.availability import Availability
from sim.config import SlurmConfig
from sim.dependency import Dependency, parse_dependency
from sim.limits import REASON_CPUS, REASON_JOBS, REASON_NODES, REASON_SUBMIT, QosLimits
from sim.mapparams import MapParams
from sim.pools import Alloc, Pools, SegmentMap, spread, take
from sim.priority import PriorityModel
from sim.state import SimJob, SimState
from sim.traces.model import Trace

_SUBMIT, _TIMER, _KICK, _END = 0, 1, 2, 3
# Slurm's will-run test frees running jobs in groups cut at 30-s windows (sim/_backfill.c).
WILL_RUN_WINDOW = 30.0
_NAN = math.nan


@dataclass(frozen=True, slots=True)
class BackfillCycle:
    """Opt-in sub-second timing of slurmctld (``Simulator(cycle=...)``); off by default,
    when backfill passes fall on multiples of ``bf_interval`` and a job's end is processed
    in the second its run time ends.

    With it, Slurm 22.05's backfill thread is a free-running loop: it sleeps ``bf_interval``
    after each wake-up, and a wake-up that finds work (a job pending, or anything changed
    since the last pass: a pass itself updates the pending jobs, so real Slurm runs one at
    every wake-up while jobs wait) runs a pass lasting ``cost`` seconds, so the loop
    drifts later by ``cost`` per pass; idle wake-ups keep the phase. ``phase`` is the
    first wake-up (seconds after t = 0); ``end_latency`` is the delay from a job's run time
    ending to slurmctld processing its completion (what frees its units). ``completing``
    holds every start that long after a job's end is processed (the model has no nodes:
    neither scheduler starts any job, as on a one-node cluster), then runs the main
    scheduler, as Slurm does while a node is COMPLETING until its epilog is done. With
    ``completing_window``, only an end processed within that many seconds after a backfill
    pass began is held (the benchmark's runs show a second's wait after those ends only; see
    docs/results.md). Times are then fractional.

    ``wakes`` replays measured wake-ups instead (the passes of a real run, from slurmctld's
    log): the loop wakes at each of them; where two are more than 1.5 ``bf_interval`` apart
    (the real loop found no work in between) it wakes idly every ``bf_interval`` after the
    earlier one; after the last it free-runs as above (``phase`` and ``cost`` then apply
    only from there). ``epilog`` holds every start that long after any job's end is
    processed (its node is COMPLETING until the epilog ends); then the main scheduler runs
    if ``main_on_end``.

    ``main_on_end=False``: a job's end does not run the main scheduler (Slurm only queues it
    for slurmctld's background loop, which runs it at most once per ``batch_sched_delay``);
    the backfill loop starts the next job, and the main scheduler runs only for submissions
    (``batch_sched_delay`` later), for the full queue every ``sched_interval`` and after a
    ``completing`` hold. ``whole_seconds``: the backfill map counts in Slurm's whole seconds
    (``time_t``): a pass plans from the second it runs in, a running job ends in the map at
    its start's second plus its limit, and a job that would end in the very second a
    reservation begins delays it (Slurm's map test is closed at the end); one job is
    started at a time, so that each started job is in the map so rounded.
    """

    phase: float = 0.0
    cost: float = 0.0
    end_latency: float = 0.0
    completing: float = 0.0
    completing_window: float = math.inf
    wakes: tuple[float, ...] = ()
    epilog: float = 0.0
    main_on_end: bool = True
    whole_seconds: bool = False


@dataclass(frozen=True, slots=True)
class JobView:
    """A read-only view of a job, as ``scontrol show job`` would give it."""

    job_id: int
    state: JobState
    units: int
    limit: float
    runtime: float
    user: int
    name: str
    submit: float
    eligible: float
    start: float
    end: float
    priority: int
    backfill: bool


@dataclass(frozen=True, slots=True)
class Record:
    """One finished job."""

    job_id: int
    trace_index: int
    user: int
    units: int
    limit: float
    submit: float
    eligible: float
    start: float
    end: float
    state: JobState
    backfill: bool


class Simulator:
    """Replays a trace (and injected jobs) through Slurm's scheduling rules.

    ``total_units`` defaults to the trace's (``Trace.total_units``), else the config's node or
    CPU count. All times are seconds relative to ``epoch``, the Unix time of t = 0 (default
    ``trace.start_epoch``, else 0): Slurm aligns its backfill start estimates to Unix time.

    Partitions whose ``Nodes=`` split the cluster make node pools (sim/pools.py): a job runs
    on its partition's nodes only. ``limits``: per-user QOS limits (sim/limits.py).
    ``availability``: the units that may be allocated over time (sim/availability.py; one
    pool only). :meth:`run` always returns; :meth:`never_started` lists what never ran.
    """

    def __init__(
        self,
        trace: Trace | None,
        config: SlurmConfig | None = None,
        *,
        total_units: int | None = None,
        seed: int = 0,
        epoch: float | None = None,
        limits: QosLimits | None = None,
        cycle: BackfillCycle | None = None,
        availability: Availability | None = None,
    ) -> None:
        self.cfg = cfg = config or SlurmConfig()
        self.cycle = cycle
        self.trace = trace
        unit = trace.unit if trace is not None else (cfg.units or "nodes")
        if total_units is None:
            total_units = trace.total_units if trace is not None and trace.total_units else None
        if total_units is None:
            total_units = cfg.cpus if unit in ("cpus", "procs") else cfg.nodes
        if not total_units or total_units <= 0:
            raise ValueError(
                "cluster size unknown: pass total_units (the trace and config give none)"
            )
        self.total_units = int(total_units)
        self.unit = unit
        self.seed = seed
        if epoch is None:
            epoch = trace.start_epoch if trace is not None else 0.0
        self.epoch = float(epoch)
        n_users = int(trace.user.max()) + 1 if trace is not None and len(trace) else 1
        self.prio = PriorityModel(cfg, self.total_units, unit, n_users)
        self._part_default = cfg.partition("")
        self._cpus_per_node = (
            cfg.cpus // cfg.nodes if unit in ("cpus", "procs") and cfg.nodes and cfg.cpus else 1
        )
        self._pools = Pools(cfg, unit, self.total_units) if Pools.active(cfg) else None
        self.limits = limits if limits is not None and limits.any else None
        self._run_limits = self.limits is not None and self.limits.run_limited
        # CPUs per node on a node-counted cluster (QOS cpu limits), when the config says
        self._node_cpus = cfg.cpus // cfg.nodes if cfg.nodes and cfg.cpus else 1
        # the slow, general passes: node pools or limits on running jobs
        self._general = self._pools is not None or self._run_limits
        # partitions whose MaxTime holds jobs back (PartitionTimeLimit)
        self._max_time = {p.name: p.max_time for p in cfg.partitions.values()}
        self._time_held = any(t < math.inf for t in self._max_time.values())
        # whether a job can be rejected at submission, or limits count submissions
        self._rejects = (
            self.limits is not None
            or self._pools is not None
            or (cfg.enforce_part_limits and self._time_held)
        )
        self._arrays = _TraceArrays(trace, self.total_units, bool(cfg.partitions))
        self._params = MapParams(
            now=0.0,
            free=self.total_units,
            ends=[],
            horizon=cfg.bf_window,
            min_step=max(cfg.bf_resolution, 1.0),
            per_node=self._cpus_per_node,
            total=self.total_units,
            window=WILL_RUN_WINDOW,
            linear=float(cfg.bf_window_linear),
            epoch=self.epoch,
            resolution=float(cfg.bf_resolution),
        )
        self.state = SimState(
            free=self.total_units,
            next_id=self._arrays.max_id + 1,
            # the first PriorityCalcPeriod tick is due at once when priorities depend on time
            calc_next=-math.inf if self.prio.time_dependent else math.inf,
            fairshare=self.prio.fairshare,
        )
        if self._pools is not None:
            self.state.seg_free = list(self._pools.seg_size)
        self.state.cap = self.total_units
        self.availability = availability
        self._av_t: list[float] = []
        self._av_u: list[int] = []
        if availability is not None and availability.times:
            if self._pools is not None:
                raise ValueError("an availability timeline needs a single pool (no Nodes= split)")
            if max(availability.units) > self.total_units:
                raise ValueError(
                    f"availability of {max(availability.units)} units exceeds the cluster's "
                    f"{self.total_units}"
                )
            self._av_t = list(availability.times)
            self._av_u = list(availability.units)
        if cycle is not None:
            if min(
                cycle.phase, cycle.cost, cycle.end_latency, cycle.completing, cycle.epilog
            ) < 0 or not (cycle.completing_window > 0):
                raise ValueError(f"bad backfill cycle {cycle}")
            self.state.bf_wake = cycle.phase
            self._wakes = self._fill_wakes(sorted(cycle.wakes), cfg.bf_interval)
            if self._wakes:
                self.state.bf_wake = self._wakes[0]
        else:
            self._wakes = []
        self._whole = cycle is not None and cycle.whole_seconds
        self._log: list[Record] = []  # finished jobs, append-only (restore truncates)
        self._fin_pos: dict[int, int] = {}  # job id -> index in _log
        self.on_start: Callable[[int, float], None] | None = None

    # ------------------------------------------------------------------ public API
    def submit(self, spec: JobSpec) -> int:
        """Inject a job (e.g. the next job of a chain); returns its job id."""
        st = self.state
        jid = spec.job_id if spec.job_id is not None else st.next_id
        if self._known(jid):
            raise ValueError(f"job id {jid} already exists")
        st.next_id = max(st.next_id, jid + 1)
        submit = st.now if spec.submit is None else float(spec.submit)
        if submit < st.now:
            raise ValueError(f"submit time {submit} is in the past (now {st.now})")
        if spec.units <= 0 or spec.units > self.total_units:
            raise ValueError(f"job asks for {spec.units} units; the cluster has {self.total_units}")
        if spec.limit <= 0:
            raise ValueError("time limit must be > 0")
        deps = parse_dependency(spec.dependency)
        for d in deps:
            if d.target is not None and not self._known(d.target):
                raise ValueError(f"dependency on unknown job {d.target}")
        job = self._spec_job(jid, spec, submit, deps)
        why = self._reject_reason(job)
        if why is not None and (submit <= st.now or why != REASON_SUBMIT):
            raise ValueError(f"job {jid} rejected at submission: {why}")
        if submit <= st.now:
            self._arrive(job)
            self._after_submissions()
            self._after_events()
        else:
            self._push(submit, _SUBMIT, job)
        return jid

    def cancel(self, job_id: int) -> None:
        """Cancel a pending or running job (``scancel``)."""
        st = self.state
        job = st.pending.get(job_id)
        if job is not None:
            self._remove_pending(job)
            self._finish(job, JobState.CANCELLED, _NAN, st.now)
        elif job_id in st.running:
            job = st.running.pop(job_id)
            job.runtime = -1.0  # marks the heap entry stale
            self._release(job, JobState.CANCELLED)
        else:
            raise KeyError(f"job {job_id} is neither pending nor running")
        self._after_events()

    def job(self, job_id: int) -> JobView:
        """The job's current view; raises KeyError for an unknown id."""
        st = self.state
        job = st.pending.get(job_id) or st.running.get(job_id)
        if job is not None:
            return self._view(job, job.state)
        pos = self._fin_pos.get(job_id)
        if pos is not None:
            r = self._log[pos]
            ran = r.end - r.start if not math.isnan(r.start) else 0.0
            return JobView(
                job_id,
                r.state,
                r.units,
                r.limit,
                ran,
                r.user,
                "",
                r.submit,
                r.eligible,
                r.start,
                r.end,
                0,
                r.backfill,
            )
        raise KeyError(f"unknown job {job_id}")

    def reason(self, job_id: int) -> str:
        """Why a job waits, as ``squeue -o %r`` says (``PartitionTimeLimit``, ``Dependency``,
        ``BeginTime``, a QOS limit such as ``QOSMaxJobsPerUserLimit``, ``Resources`` for the
        first job in the queue, else ``Priority``); why a rejected job was refused; "" for a
        job that is not pending."""
        st = self.state
        if job_id in st.rejected:
            return st.rejected[job_id]
        job = st.pending.get(job_id)
        if job is None:
            if self._known(job_id):
                return ""
            raise KeyError(f"unknown job {job_id}")
        if job.limit > self._max_time.get(job.part, math.inf):
            return "PartitionTimeLimit"
        if math.isnan(job.eligible):
            return "BeginTime" if job.begin is not None and job.begin > st.now else "Dependency"
        why = self._limit_reason(job) if self._run_limits else None
        if why is not None:
            return why
        return "Resources" if st.order and st.order[0] is job else "Priority"

    def never_started(self) -> dict[int, str]:
        """Jobs still pending (with ``squeue``'s reason) or rejected (with why), by job id.

        After :meth:`run` these are the jobs that can never start: larger than the cluster or
        their partition, over a per-user limit on their own, past ``MaxTime``, or waiting on
        a dependency that is never satisfied."""
        st = self.state
        out = {jid: f"rejected: {why}" for jid, why in st.rejected.items()}
        for jid, job in st.pending.items():
            big = job.units > self.total_units
            out[jid] = "Resources (larger than the cluster)" if big else self.reason(jid)
        return out

    def next_event_time(self) -> float:
        """Time of the next submission, job end or timer (inf when none remain)."""
        st = self.state
        t = st.heap[0][0] if st.heap else math.inf
        if st.cursor < self._arrays.n:
            t = min(t, float(self._arrays.submit[st.cursor]))
        if st.av_at < len(self._av_t):
            t = min(t, self._av_t[st.av_at])
        return t

    def advance(self, until: float) -> None:
        """Process every event with time <= ``until``; afterwards ``now == until``."""
        st = self.state
        if until < st.now:
            raise ValueError(f"cannot go back in time ({until} < {st.now})")
        self._loop(until)
        st.now = until

    def run(self, *, progress: bool = False, until: float = math.inf) -> None:
        """Run until no event remains (or ``until``)."""
        st = self.state
        if not progress:
            self._loop(until)
            return
        from tqdm import tqdm

        n = self._arrays.n
        with tqdm(total=n, unit="job", desc="replay", mininterval=0.5) as bar:
            done = 0
            while self.next_event_time() <= until and self.next_event_time() < math.inf:
                target = min(until, self.next_event_time() + 6 * 3600.0)
                self._loop(target)
                bar.update(st.cursor - done)
                done = st.cursor

    def queue_snapshot(self) -> QueueSnapshot:
        """Pending and running jobs now, as ``squeue`` shows them (in the order they joined
        each set; the compiled core reads the jobs' fields)."""
        st = self.state
        n, m = len(st.pending), len(st.running)
        f64, i64, empty = np.float64, np.int64, np.empty
        snap = QueueSnapshot(
            time=st.now,
            total_units=self.total_units,
            pend_id=empty(n, i64),
            pend_units=empty(n, i64),
            pend_limit=empty(n, f64),
            pend_submit=empty(n, f64),
            pend_eligible=empty(n, f64),
            run_id=empty(m, i64),
            run_units=empty(m, i64),
            run_limit=empty(m, f64),
            run_start=empty(m, f64),
        )
        _backfill.queue_arrays(
            st.pending,
            st.running,
            snap.pend_id,
            snap.pend_units,
            snap.pend_limit,
            snap.pend_submit,
            snap.pend_eligible,
            snap.run_id,
            snap.run_units,
            snap.run_limit,
            snap.run_start,
        )
        return snap

    def estimate_start(self, job_id: int) -> float | None:
        """Expected start of a pending job as ``squeue --start`` reports it: reservations
        of every higher-priority job in the backfill map, then this job's earliest fit.
        None when the job is not eligible yet or no start lies within ``bf_window``."""
        st = self.state
        job = st.pending.get(job_id)
        if job is None:
            if job_id in st.running:
                return st.running[job_id].start
            raise KeyError(f"job {job_id} is not pending")
        if math.isnan(job.eligible):
            return None
        self._refresh_priorities()
        order = st.order
        if self._pools is not None:
            est = self._walk_pools(order.index(job), False)
            assert not isinstance(est, list)
            return est
        return _backfill.estimate(order, order.index(job), self._map_params())

    def snapshot(self) -> bytes:
        """The whole mutable state (:class:`SimState`), cheaply (O(live jobs)); see
        :meth:`restore`."""
        return pickle.dumps((self.state, len(self._log)), protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, blob: bytes) -> None:
        """Return to a state taken by :meth:`snapshot` (of this or another simulator over
        the same trace and config, e.g. in a worker process).

        The finished-job log is not part of a snapshot: restoring truncates this
        simulator's log to the snapshot's length, and a simulator whose log is shorter (a
        fresh one, or one restored to an earlier point) simply lacks the records of jobs
        that finished before the snapshot."""
        state, n = pickle.loads(blob)
        self.state = state
        self.prio.fairshare = state.fairshare
        for rec in self._log[n:]:
            del self._fin_pos[rec.job_id]
        del self._log[n:]

    # ------------------------------------------------------------------ start estimate of a job
    def estimate_start_for(self, spec: JobSpec) -> float | None:
        """What ``submit(spec)`` followed by :meth:`estimate_start` would report now (``now``
        itself when the submission starts the job at once), without changing the simulator.

        The job's place in priority order, the scheduling its submission runs at once (a due
        priority refresh, the main passes) and the backfill map are computed on copies. Where
        that is not done, a real probe (snapshot, submit, estimate, restore) answers: under
        QOS limits, for a job with a dependency, a ``begin`` or a later ``submit``, for a
        submission the real one would refuse, and when that submission's main pass would start
        other jobs on node pools or jobs that others wait on. Hypothetical starts do not call
        ``on_start``."""
        job = self._hypothetical_job(spec)
        if job is None:
            return self._estimate_by_probe(spec)
        if math.isnan(job.eligible):
            return None  # never eligible (PartitionTimeLimit)
        st, cfg = self.state, self.cfg
        now = st.now
        order = list(st.order)
        insort(order, job, key=SimJob.sort_key)
        passes = self._submission_passes(job, order)
        if passes is None:
            return self._estimate_by_probe(spec)
        free, started, stale = passes
        if started and started[-1] is job:
            return now
        # estimate_start
        if stale:
            self._refresh_copy(order, started)
        target = order.index(job)
        if self._pools is not None:
            saved, st.order = st.order, order
            try:
                est = self._walk_pools(target, False)
            finally:
                st.order = saved
            assert not isinstance(est, list)
            return est
        ends = st.ends
        if started:
            ends = list(ends)
            for j in started:
                insort(ends, (self._map_end(now, j.limit), j.seq, j.units))
        p = self._params
        params = MapParams(
            now=now,
            free=free,
            ends=ends,
            horizon=now + cfg.bf_window,
            min_step=p.min_step,
            per_node=p.per_node,
            total=p.total,
            window=p.window,
            linear=p.linear,
            epoch=p.epoch,
            resolution=p.resolution,
        )
        return _backfill.estimate(order, target, params)

    def _hypothetical_job(self, spec: JobSpec) -> SimJob | None:
        """The job ``submit(spec)`` would queue now, as :meth:`_arrive` and
        :meth:`_check_eligible` make it (``eligible`` NaN when it never can be), touching
        nothing; None where :meth:`estimate_start_for` leaves the answer to a real probe."""
        st = self.state
        now = st.now
        jid = spec.job_id if spec.job_id is not None else st.next_id
        if (
            self.limits is not None
            or spec.dependency
            or spec.begin is not None
            or (spec.submit is not None and float(spec.submit) != now)
            or self._known(jid)
            or not 0 < spec.units <= self.total_units
            or spec.limit <= 0
        ):
            return None
        job = self._spec_job(jid, spec, now, [])  # spec.begin is None here
        if self._rejects and self._reject_reason(job) is not None:
            return None
        job.seq = st.seq + 1
        if self._time_held and job.limit > self._max_time.get(job.part, math.inf):
            return job
        job.eligible = job.accrue = now
        job.prio = self.prio.priority(job.static, job.accrue, job.user, self._prio_calc_time())
        job.key = (-job.tier, -job.prio, job.seq)
        return job

    def _submission_passes(
        self, job: SimJob, order: list[SimJob]
    ) -> tuple[int, list[SimJob], bool] | None:
        """:meth:`_after_submissions` and :meth:`_after_events` for ``job`` queued now, on
        ``order`` (the queue with it, changed in place): the free units after, the jobs the
        main passes start (ending with ``job`` if it starts: they stop there) and whether the
        priorities are still stale; None where that is left to a real probe. Keep in step
        with those methods and :meth:`_main_pass` (tests/sim/test_estimate_start_for.py
        compares the two ways)."""
        st, cfg = self.state, self.cfg
        now = st.now
        minu = st.minu if st.minu >= 0 else min((j.units for j in st.order), default=1 << 62)
        minu = min(minu, job.units)
        free = st.free
        started: list[SimJob] = []
        period = cfg.calc_period
        stale = self.prio.time_dependent and math.floor(now / period) * period > st.prio_tick
        main_dirty = st.main_dirty or cfg.batch_sched_delay <= 0
        full_main = st.full_main_due and cfg.sched_interval > 0 and now % cfg.sched_interval == 0
        if not (main_dirty or full_main or now >= st.calc_next):
            return free, started, stale
        can_start = free > 0 and free >= minu and now >= st.cg_until
        if can_start and now >= st.calc_next and stale:
            stale = False
            if self._refresh_copy(order, started):
                full_main = cfg.sched_interval > 0 and now % cfg.sched_interval == 0
        for depth, due in ((cfg.default_queue_depth, main_dirty), (len(order), full_main)):
            if not (due and can_start):
                continue
            idx = self._main_pass_picks(order, depth, free)
            picked = [order[i] for i in idx]
            if any(j is job for j in picked):
                started.append(job)
                return free, started, stale
            if picked and (self._pools is not None or any(j.id in st.deps.waiters for j in picked)):
                return None
            for i in reversed(idx):
                del order[i]
            started.extend(picked)
            free -= sum(j.units for j in picked)
            minu = min((j.units for j in order), default=1 << 62)
            can_start = free > 0 and free >= minu and now >= st.cg_until
        return free, started, stale

    def _estimate_by_probe(self, spec: JobSpec) -> float | None:
        """:meth:`estimate_start_for` by a real probe: snapshot, submit, estimate, restore."""
        saved = self.snapshot()
        try:
            jid = self.submit(spec)
            job = self.state.running.get(jid)
            if job is not None:
                return job.start
            return self.estimate_start(jid)
        finally:
            self.restore(saved)

    def _main_pass_picks(self, order: list[SimJob], depth: int, free: int) -> list[int]:
        """Indices into ``order`` of the jobs :meth:`_main_pass` would start with ``free``
        units (and the node pools' free units now); no QOS limits."""
        picks: list[int] = []
        blocked: set[str] = set()
        if self._pools is not None:
            seg_free = list(self.state.seg_free)
            for i, job in enumerate(order[:depth]):
                if job.part in blocked:
                    continue
                if take(seg_free, job.pool, job.units) is None:
                    blocked.add(job.part)
                    continue
                picks.append(i)
            return picks
        single = len(self.cfg.partitions) <= 1
        for i, job in enumerate(order[:depth]):
            if job.part in blocked:
                continue
            if job.units <= free:
                picks.append(i)
                free -= job.units
            else:
                blocked.add(job.part)
                if len(blocked) == 1 and single:
                    break
        return picks

    def _refresh_copy(self, order: list[SimJob], started: list[SimJob]) -> bool:
        """:meth:`_refresh_priorities` at the current tick on ``order``, a copy of the queue,
        leaving the jobs' priorities and the fair-share usage as they were (``started``: jobs
        started since, which fair-share counts); True if the order changed."""
        model = self.prio
        period = self.cfg.calc_period
        tick = math.floor(self.state.now / period) * period
        factors = model.fairshare_factors
        if model.w_fairshare > 0:
            import copy

            share = copy.deepcopy(model.fairshare)
            for j in started:
                share.change(j.user, j.units, self.state.now)
            factors = share.tick(tick, model.n_users)
        saved = [(j, j.prio, j.key) for j in order]
        try:
            return _backfill.refresh(
                order,
                tick,
                float(model.w_age),
                float(self.cfg.max_age),
                float(model.w_fairshare),
                factors,
            )
        finally:
            for j, prio, key in saved:
                j.prio = prio
                j.key = key

    @property
    def now(self) -> float:
        """The simulated time (seconds after ``epoch``)."""
        return self.state.now

    @property
    def free(self) -> int:
        """Units free now."""
        return self.state.free

    @property
    def n_backfilled(self) -> int:
        """Jobs started by the backfill scheduler so far."""
        return self.state.n_backfilled

    @property
    def records(self) -> list[Record]:
        """Finished jobs, in order of finishing."""
        return self._log

    @property
    def pending_count(self) -> int:
        st = self.state
        return len(st.pending)

    @property
    def running_count(self) -> int:
        st = self.state
        return len(st.running)

    # ------------------------------------------------------------------ event loop
    def _push(self, t: float, kind: int, payload: Any) -> None:
        st = self.state
        st.seq += 1
        heapq.heappush(st.heap, (t, kind, st.seq, payload))

    def _loop(self, until: float) -> None:  # noqa: C901 -- the event loop, inlined for speed
        st = self.state
        arrays = self._arrays
        submit_times = arrays.submit
        n = arrays.n
        heap = st.heap
        cfg = self.cfg
        bf = cfg.backfill
        bf_int = cfg.bf_interval
        sched_int = cfg.sched_interval
        time_dep = self.prio.time_dependent
        cycle = self.cycle
        end_main = cycle is None or cycle.main_on_end
        av_t, av_u = self._av_t, self._av_u
        n_av = len(av_t)
        while True:
            t = heap[0][0] if heap else math.inf
            if st.cursor < n:
                ts = submit_times[st.cursor]
                if ts < t:
                    t = float(ts)
            if st.av_at < n_av and av_t[st.av_at] < t:
                t = av_t[st.av_at]
            # with jobs pending, every wake-up runs a pass (and drifts) while anything else
            # is still to come; once nothing is, no pass could change anything
            if cycle is not None and bf and (st.bf_dirty or (st.pending and t < math.inf)):
                t = min(t, self._next_wake())
            # periodic passes that could change something (_can_any_start, inlined)
            free = st.free
            if free > 0 and free >= (st.minu if st.minu >= 0 else self._min_pending_units()):
                if bf and st.bf_dirty and cycle is None:
                    tb = math.ceil(st.now / bf_int) * bf_int
                    if tb <= st.now and st.bf_ran_at == st.now:
                        tb += bf_int
                    if tb < t:
                        t = tb
                if st.full_main_due and sched_int > 0:
                    tm = math.ceil(st.now / sched_int) * sched_int
                    if tm <= st.now and st.main_ran_at == st.now:
                        tm += sched_int
                    if tm < t:
                        t = tm
                # once nothing runs and no event is left, priorities can no longer change
                # which job starts: no more ticks, so a job that can never start ends the run
                if time_dep and (heap or st.cursor < n or st.running or st.av_at < n_av):
                    tc = st.calc_next
                    if tc < t:
                        t = tc if tc > st.now else st.now
            if t > until or t == math.inf:
                return
            st.now = t
            events = False
            submitted = False
            # 1. submissions: trace jobs, then injected ones
            while st.cursor < n and submit_times[st.cursor] == t:
                self._arrive(self._trace_job(st.cursor))
                st.cursor += 1
                submitted = True
            while heap and heap[0][0] == t and heap[0][1] == _SUBMIT:
                self._arrive(heapq.heappop(heap)[3])
                submitted = True
            if submitted:
                events = True
                self._after_submissions()
            # 2. timers
            while heap and heap[0][0] == t and heap[0][1] == _TIMER:
                job = heapq.heappop(heap)[3]
                if job.id in st.pending:
                    self._check_eligible(job)
                events = True
                st.main_dirty = True
            # 3. the delayed main-scheduler run for batch submissions (or a job's epilog
            # completing, BackfillCycle.completing)
            while heap and heap[0][0] == t and heap[0][1] == _KICK:
                heapq.heappop(heap)
                events = True
                st.main_dirty = True
            # 4. the backfill loop: it sees this second's submissions, not its job ends
            if cycle is not None:
                if bf and t == self._next_wake():
                    self._cycle_wake(events)
                    events = False
            elif bf and t % bf_int == 0 and st.bf_ran_at != t:
                st.bf_ran_at = t
                if st.bf_dirty or events:
                    if self._can_any_start():
                        self._backfill_pass()
                    st.bf_dirty = False
                    events = False
            # 5. job ends
            while heap and heap[0][0] == t and heap[0][1] == _END:
                _, _, _, job = heapq.heappop(heap)
                if job.runtime >= 0 and job.id in st.running:  # not cancelled
                    del st.running[job.id]
                    if job.runtime > job.limit:
                        state = JobState.TIMEOUT
                    elif job.exit_code:
                        state = JobState.FAILED
                    else:
                        state = JobState.COMPLETED
                    self._release(job, state)
                    if (
                        cycle is not None
                        and cycle.completing > 0
                        and t - st.bf_pass_at < cycle.completing_window
                    ):
                        # the epilog completes later: no starts until then, then a main pass
                        st.cg_until = max(st.cg_until, t + cycle.completing)
                        self._push(st.cg_until, _KICK, None)
                    elif cycle is not None and cycle.epilog > 0:
                        # its node stays COMPLETING until the epilog ends: nothing starts
                        st.cg_until = max(st.cg_until, t + cycle.epilog)
                        if end_main:
                            self._push(t + cycle.epilog, _KICK, None)
                events = True
                st.main_dirty = st.main_dirty or end_main
            # 6. availability steps (drains, maintenance, nodes lent elsewhere)
            while st.av_at < n_av and av_t[st.av_at] == t:
                st.free += av_u[st.av_at] - st.cap
                st.cap = av_u[st.av_at]
                st.av_at += 1
                events = True
                st.main_dirty = True
            self._after_events(events)

    @staticmethod
    def _fill_wakes(wakes: list[float], step: float) -> list[float]:
        """Measured wake-ups (BackfillCycle.wakes) with the idle ones between them: every
        ``step`` after a wake-up followed by none within 1.5 ``step``."""
        out: list[float] = []
        for a, b in zip(wakes, wakes[1:] + [math.inf], strict=False):
            out.append(a)
            if b < math.inf:
                w = a + step
                while b - w > 0.5 * step:
                    out.append(w)
                    w += step
        return out

    def _next_wake(self) -> float:
        """The backfill loop's next wake-up at or after now (BackfillCycle): idle wake-ups
        since the last pass kept the phase."""
        st = self.state
        w = st.bf_wake
        if w < st.now:
            wakes = self._wakes
            if wakes and st.now <= wakes[-1]:
                w = wakes[bisect_left(wakes, st.now)]
            else:
                if wakes and w < wakes[-1]:
                    w = wakes[-1]
                step = self.cfg.bf_interval
                w += math.ceil((st.now - w) / step) * step
            st.bf_wake = w
        return w

    def _cycle_wake(self, events: bool) -> None:
        """A wake-up of the free-running backfill loop: with work, a pass that delays the
        next wake-up by its cost; without, the next wake-up one ``bf_interval`` later."""
        st = self.state
        assert self.cycle is not None
        st.bf_ran_at = st.now
        nxt = st.now + self.cfg.bf_interval
        if st.bf_dirty or events or st.pending:
            st.bf_pass_at = st.now
            if self._can_any_start():
                self._backfill_pass()
            # an epilog that holds every start leaves the pass to do again
            st.bf_dirty = st.now < st.cg_until
            nxt += self.cycle.cost
        wakes = self._wakes
        if wakes and st.now < wakes[-1]:  # measured wake-ups: the next one
            nxt = wakes[bisect_right(wakes, st.now)]
        st.bf_wake = nxt

    def _after_submissions(self) -> None:
        """Slurm may delay scheduling batch submissions by ``batch_sched_delay``: the main
        scheduler runs for them that much later (one run for all submissions in between),
        and the backfill loop may start them first."""
        st = self.state
        delay = self.cfg.batch_sched_delay
        if delay <= 0:
            st.main_dirty = True
        elif st.kick_at <= st.now:
            st.kick_at = st.now + delay
            self._push(st.kick_at, _KICK, None)

    def _after_events(self, events: bool = True) -> None:
        st = self.state
        t = st.now
        cfg = self.cfg
        if events:
            st.bf_dirty = True
        full_main = st.full_main_due and cfg.sched_interval > 0 and t % cfg.sched_interval == 0
        if not (st.main_dirty or full_main or t >= st.calc_next):
            return  # nothing due
        can_start = self._can_any_start()
        if can_start and t >= st.calc_next and self._refresh_priorities():
            st.bf_dirty = True
            st.full_main_due = True
            full_main = cfg.sched_interval > 0 and t % cfg.sched_interval == 0
        if st.main_dirty and can_start:
            self._main_pass(cfg.default_queue_depth)
            can_start = self._can_any_start()
        st.main_dirty = False
        if full_main:
            if can_start:
                self._main_pass(len(st.order))
            st.full_main_due = False
            st.main_ran_at = t

    # ------------------------------------------------------------------ job lifecycle
    def _spec_job(self, jid: int, spec: JobSpec, submit: float, deps: list[Dependency]) -> SimJob:
        """The job of an injected ``spec`` (:meth:`submit`, :meth:`estimate_start_for`)."""
        return self._new_job(
            jid,
            -1,
            spec.units,
            spec.limit,
            spec.runtime,
            spec.user,
            spec.group,
            spec.name,
            submit,
            spec.begin,
            deps,
            spec.partition,
            spec.qos_factor,
            spec.exit_code,
        )

    def _new_job(
        self,
        jid: int,
        tidx: int,
        units: int,
        limit: float,
        runtime: float,
        user: int,
        group: int,
        name: str,
        submit: float,
        begin: float | None,
        deps: list[Dependency],
        partition: str,
        qos: float,
        exit_code: int,
    ) -> SimJob:
        try:
            part = self.cfg.partition(partition) if partition else self._part_default
        except ConfigError as e:
            raise ConfigError(f"job {jid}: {e}") from None
        pools = self._pools
        if pools is not None and not part.name:
            raise ConfigError(
                f"job {jid} names no partition and {self.cfg.source or 'the config'} has no "
                "Default=YES partition"
            )
        job = SimJob()
        job.id = jid
        job.seq = 0
        job.tidx = tidx
        job.units = int(units)
        job.limit = float(limit)
        job.runtime = float(runtime)
        job.user = int(user)
        job.group = int(group)
        job.name = name
        job.submit = submit
        job.begin = begin
        job.deps = deps
        job.has_singleton = any(d.kind == "singleton" for d in deps)
        job.part = part.name
        if self._general:  # only then read (a snapshot of the plain case stays as small)
            job.pool = pools.part_segs[part.name] if pools is not None else ()
            job.alloc = None
        job.tier = part.priority_tier
        job.static = self.prio.static_part(job.units, part.priority_job_factor, qos)
        job.exit_code = exit_code
        job.state = JobState.PENDING
        job.eligible = _NAN
        job.accrue = _NAN
        job.start = _NAN
        job.end = _NAN
        job.prio = 1
        job.key = (0, 0, 0)
        job.backfill = False
        return job

    def _trace_job(self, i: int) -> SimJob:
        a = self._arrays
        return self._new_job(
            int(a.job_id[i]),
            i,
            int(a.units[i]),
            float(a.limit[i]),
            float(a.runtime[i]),
            int(a.user[i]),
            int(a.group[i]),
            a.names[i] if a.names else "",
            float(a.submit[i]),
            None,
            [],
            a.partitions[i] if a.partitions else "",
            0.0,
            int(a.exit_code[i]),
        )

    def _arrive(self, job: SimJob) -> None:
        st = self.state
        if self._rejects:
            why = self._reject_reason(job)
            if why is not None:
                self._reject(job, why)
                return
            if self.limits is not None:
                self._use(job.user)[3] += 1
        st.seq += 1
        job.seq = st.seq
        job.submit = st.now
        st.pending[job.id] = job
        if self.cfg.accrue_always:
            job.accrue = st.now
        st.deps.add(job, self._fin_pos)
        self._check_eligible(job)

    def _reject_reason(self, job: SimJob) -> str | None:
        """Why Slurm 22.05 would refuse the job at submission, or None."""
        pools = self._pools
        if pools is not None and job.units > pools.part_size[job.part]:
            return "Requested node configuration is not available"
        if self.cfg.enforce_part_limits and job.limit > self._max_time.get(job.part, math.inf):
            return "PartitionTimeLimit"
        lim = self.limits
        cap = lim.max_submit_jobs_per_user if lim is not None else None
        if cap is not None and self._use(job.user)[3] >= cap:
            return REASON_SUBMIT
        return None

    def _reject(self, job: SimJob, why: str) -> None:
        """A job refused at submission: logged as CANCELLED, never started."""
        st = self.state
        st.rejected[job.id] = why
        job.state = JobState.CANCELLED
        self._log_job(job, st.now, _NAN, _NAN, st.now, JobState.CANCELLED, False)

    def _log_job(
        self,
        job: SimJob,
        submit: float,
        eligible: float,
        start: float,
        end: float,
        state: JobState,
        backfill: bool,
    ) -> None:
        """Append a finished (or rejected) job's record to the log."""
        self._fin_pos[job.id] = len(self._log)
        self._log.append(
            Record(
                job.id,
                job.tidx,
                job.user,
                job.units,
                job.limit,
                submit,
                eligible,
                start,
                end,
                state,
                backfill,
            )
        )

    def _use(self, user: int) -> list[int]:
        """The user's [running jobs, nodes, CPUs, pending + running jobs] (QOS limits)."""
        use = self.state.user_use.get(user)
        if use is None:
            use = self.state.user_use[user] = [0, 0, 0, 0]
        return use

    def _tres(self, job: SimJob) -> tuple[int, int]:
        """The job's nodes and CPUs as QOS limits count them: on a CPU-counted cluster its
        CPUs packed onto whole nodes; on a node-counted one its nodes times CPUs per node."""
        if self.unit in ("cpus", "procs"):
            per = self._cpus_per_node
            return -(-job.units // per), job.units
        return job.units, job.units * self._node_cpus

    def _limit_reason(self, job: SimJob, extra: dict[int, list[int]] | None = None) -> str | None:
        """The QOS limit that keeps ``job`` from starting now (``extra``: what jobs started
        earlier in the same pass add per user), or None."""
        lim = self.limits
        if lim is None:
            return None
        use = self.state.user_use.get(job.user)
        more = extra.get(job.user) if extra else None
        jobs = (use[0] if use else 0) + (more[0] if more else 0)
        if lim.max_jobs_per_user is not None and jobs + 1 > lim.max_jobs_per_user:
            return REASON_JOBS
        nodes, cpus = self._tres(job)
        if lim.max_nodes_per_user is not None and not (
            lim.larger_jobs_exempt and nodes > lim.max_nodes_per_user
        ):
            held = (use[1] if use else 0) + (more[1] if more else 0)
            if held + nodes > lim.max_nodes_per_user:
                return REASON_NODES
        if lim.max_cpus_per_user is not None:
            held = (use[2] if use else 0) + (more[2] if more else 0)
            if held + cpus > lim.max_cpus_per_user:
                return REASON_CPUS
        return None

    def _count_start(self, job: SimJob, extra: dict[int, list[int]], sign: int = 1) -> None:
        """Add (sign=1) or remove (-1) a running job to per-user counts ``extra``."""
        nodes, cpus = self._tres(job)
        use = extra.setdefault(job.user, [0, 0, 0, 0])
        use[0] += sign
        use[1] += sign * nodes
        use[2] += sign * cpus

    def _check_eligible(self, job: SimJob) -> None:
        """Make a pending job eligible when its begin time and dependencies allow. A job
        over its partition's MaxTime never is (PartitionTimeLimit)."""
        st = self.state
        now = st.now
        if self._time_held and job.limit > self._max_time.get(job.part, math.inf):
            return
        if job.begin is not None and job.begin > now:
            self._push(job.begin, _TIMER, job)
            return
        wake = -math.inf
        for d in job.deps:
            ok, at = st.deps.satisfied(job, d, now, st.running, self._finished_record)
            if not ok:
                if at is not None:
                    wake = max(wake, at)
                else:
                    return
        if wake > now:
            self._push(wake, _TIMER, job)
            return
        if not math.isnan(job.eligible):
            return
        job.eligible = now
        if math.isnan(job.accrue):
            job.accrue = now
        job.prio = self.prio.priority(job.static, job.accrue, job.user, self._prio_calc_time())
        job.key = (-job.tier, -job.prio, job.seq)
        insort(st.order, job, key=SimJob.sort_key)
        h = st.min_units
        heapq.heappush(h, (job.units, job.seq, job.id))
        if job.units < st.minu:
            st.minu = job.units
        if len(h) > 2 * len(st.order) + 64:  # drop entries of jobs no longer waiting
            st.min_units = [(j.units, j.seq, j.id) for j in st.order]
            heapq.heapify(st.min_units)

    def _prio_calc_time(self) -> float:
        st = self.state
        return st.prio_tick if st.prio_tick > -math.inf else st.now

    def _finished_record(self, job_id: int) -> Record | None:
        pos = self._fin_pos.get(job_id)
        return None if pos is None else self._log[pos]

    def _start(self, job: SimJob, backfill: bool, alloc: Alloc | None = None) -> None:
        st = self.state
        now = st.now
        if self._general:
            self._take(job, alloc)
        job.state = JobState.RUNNING
        job.start = now
        job.backfill = backfill
        st.free -= job.units
        if st.free < 0:
            raise AssertionError(f"over-allocation starting job {job.id}")
        del st.pending[job.id]
        st.minu = -1
        st.running[job.id] = job
        end = now + min(job.runtime, job.limit)
        if self.cycle is not None:
            end += self.cycle.end_latency
        job.end = end
        self._push(end, _END, job)
        insort(st.ends, (self._map_end(now, job.limit), job.seq, job.units))
        self.prio.fairshare.change(job.user, job.units, now)
        if backfill:
            st.n_backfilled += 1
        if job.id in st.deps.waiters:
            for w in st.deps.started(job.id):
                if w.id in st.pending:
                    self._check_eligible(w)
        if self.on_start is not None:
            self.on_start(job.id, now)

    def _release(self, job: SimJob, state: JobState) -> None:
        """A running job ended (completed, failed, timed out or cancelled)."""
        st = self.state
        st.free += job.units
        if self._general:
            self._give_back(job)
        ends = st.ends
        entry = (self._map_end(job.start, job.limit), job.seq, job.units)
        del ends[bisect_left(ends, entry)]
        self.prio.fairshare.change(job.user, -job.units, st.now)
        self._finish(job, state, job.start, st.now)

    def _finish(self, job: SimJob, state: JobState, start: float, end: float) -> None:
        st = self.state
        if self.limits is not None:
            self._use(job.user)[3] -= 1
        job.state = state
        self._log_job(job, job.submit, job.eligible, start, end, state, job.backfill)
        deps = st.deps
        if job.id in deps.waiters:
            for w in deps.finished_waiters(job.id):
                if w.id in st.pending:
                    self._check_eligible(w)
        if job.name:
            for w in deps.leave_group(job):
                if w.id in st.pending and math.isnan(w.eligible) and w.has_singleton:
                    self._check_eligible(w)

    def _take(self, job: SimJob, alloc: Alloc | None) -> None:
        """A job starts on node pools or under QOS limits: take its units and count it."""
        st = self.state
        if self._pools is not None:
            if alloc is None:
                alloc = take(st.seg_free, job.pool, job.units)
                if alloc is None:
                    raise AssertionError(f"over-allocation starting job {job.id}")
            else:
                for s, u in alloc:
                    st.seg_free[s] -= u
                    if st.seg_free[s] < 0:
                        raise AssertionError(f"over-allocation starting job {job.id}")
            job.alloc = alloc
        if self._run_limits:
            self._count_start(job, st.user_use)

    def _give_back(self, job: SimJob) -> None:
        st = self.state
        if job.alloc is not None:
            for s, u in job.alloc:
                st.seg_free[s] += u
            job.alloc = None
        if self._run_limits:
            self._count_start(job, st.user_use, -1)

    def _remove_pending(self, job: SimJob) -> None:
        st = self.state
        del st.pending[job.id]
        st.minu = -1
        if not math.isnan(job.eligible):
            st.order.remove(job)

    def _known(self, jid: int) -> bool:
        st = self.state
        return jid in st.pending or jid in st.running or jid in self._fin_pos

    def _view(self, job: SimJob, state: JobState) -> JobView:
        return JobView(
            job.id,
            state,
            job.units,
            job.limit,
            job.runtime,
            job.user,
            job.name,
            job.submit,
            job.eligible,
            job.start,
            job.end,
            job.prio,
            job.backfill,
        )

    # ------------------------------------------------------------------ scheduling
    def _min_pending_units(self) -> int:
        """Units of the smallest eligible pending job (cached until a pending job leaves)."""
        st = self.state
        if st.minu >= 0:
            return st.minu
        h = st.min_units
        pending = st.pending
        while h:
            units, seq, jid = h[0]
            job = pending.get(jid)
            if job is not None and job.seq == seq and not math.isnan(job.eligible):
                st.minu = units
                return units
            heapq.heappop(h)
        st.minu = 1 << 62
        return st.minu

    def _can_any_start(self) -> bool:
        st = self.state
        if st.now < st.cg_until:  # a job's epilog is still running (BackfillCycle.completing)
            return False
        return st.free > 0 and st.free >= self._min_pending_units()

    def _refresh_priorities(self) -> bool:
        """Recompute priorities as of the latest calc tick; True if the order changed."""
        st = self.state
        if not self.prio.time_dependent:
            return False
        period = self.cfg.calc_period
        tick = math.floor(st.now / period) * period
        if tick <= st.prio_tick:
            return False
        st.prio_tick = tick
        st.calc_next = tick + period
        model = self.prio
        model.begin_tick(tick)
        return _backfill.refresh(
            st.order,
            tick,
            float(model.w_age),
            float(self.cfg.max_age),
            float(model.w_fairshare),
            model.fairshare_factors,
        )

    def _main_pass(self, depth: int) -> None:
        """Strict priority order: start what fits; a job that does not fit blocks its
        partition for the rest of the pass."""
        if self._general:
            self._main_pass_general(depth)
            return
        st = self.state
        order = st.order
        blocked: set[str] = set()
        started: list[int] = []
        free = st.free
        for i, job in enumerate(order[:depth]):
            if job.part in blocked:
                continue
            if job.units <= free:
                started.append(i)
                free -= job.units
            else:
                blocked.add(job.part)
                if len(blocked) == 1 and len(self.cfg.partitions) <= 1:
                    break
        if started:
            jobs = [order[i] for i in started]
            for i in reversed(started):
                del order[i]
            for job in jobs:
                self._start(job, backfill=False)

    def _main_pass_general(self, depth: int) -> None:
        """:meth:`_main_pass` on node pools or under QOS limits: a job held by a limit is
        skipped and blocks nothing; a job fits when its partition's nodes hold it."""
        st = self.state
        order = st.order
        pools = self._pools
        seg_free = list(st.seg_free)
        free = st.free
        blocked: set[str] = set()
        started: list[tuple[int, Alloc | None]] = []
        extra: dict[int, list[int]] = {}
        for i, job in enumerate(order[:depth]):
            if job.part in blocked:
                continue
            if self._run_limits and self._limit_reason(job, extra) is not None:
                continue
            alloc: Alloc | None = None
            if pools is not None:
                alloc = take(seg_free, job.pool, job.units)
                if alloc is None:
                    blocked.add(job.part)
                    continue
            elif job.units > free:
                blocked.add(job.part)
                continue
            free -= job.units
            started.append((i, alloc))
            if self._run_limits:
                self._count_start(job, extra)
        if started:
            jobs = [(order[i], alloc) for i, alloc in started]
            for i, _ in reversed(started):
                del order[i]
            for job, alloc in jobs:
                self._start(job, False, alloc)

    def _map_params(self) -> MapParams:
        """The backfill map's inputs (sim/mapparams.py). Slurm's map is kept per node, so on
        a CPU-counted cluster a future reservation holds whole nodes (units per node > 1).
        One record per simulator, its changing fields updated per pass (the hot path)."""
        st, p = self.state, self._params
        p.now = math.floor(st.now) if self._whole else st.now
        p.free = st.free
        p.ends = st.ends
        p.horizon = p.now + self.cfg.bf_window
        return p

    def _map_end(self, start: float, limit: float) -> float:
        """A running job's expected end in the backfill map: rounded up to ``bf_resolution``;
        with ``BackfillCycle.whole_seconds``, its start's whole second plus its limit, less
        half a second (a job that would end in the second a reservation begins delays it)."""
        if self._whole:
            return math.floor(start) + limit - 0.5
        return _round_end(start + limit, self.cfg.bf_resolution)

    def _backfill_pass(self) -> None:
        """Slurm's backfill: walk the first ``bf_max_job_test`` jobs in priority order, start
        every job that fits now without delaying the reservation of any job before it, and
        reserve the others. Start estimates free running jobs in Slurm's will-run groups
        (sim/_backfill.c)."""
        st = self.state
        self._refresh_priorities()
        if self._pools is not None:
            self._backfill_pools()
            return
        order = st.order
        if self._whole and not self._run_limits:
            # one start at a time, so that each started job's end is in the map as Slurm's
            # whole seconds put it (the compiled plan would add it unrounded)
            while True:
                idx = _backfill.plan(order, self.cfg.bf_max_job_test, self._map_params())
                if not idx:
                    return
                self._start(order.pop(idx[0]), backfill=True)
        if self._run_limits:
            idx = self._plan_limited()
        else:
            idx = _backfill.plan(order, self.cfg.bf_max_job_test, self._map_params())
        if idx:
            started = [order[i] for i in idx]
            for i in reversed(idx):
                del order[i]
            for job in started:
                self._start(job, backfill=True)

    def _plan_limited(self) -> list[int]:
        """The compiled backfill plan under QOS limits: jobs held by a limit at their turn
        in the walk (counting the jobs the pass starts before them) are left out, with no
        reservation. The plan is redone without the first job a limit holds until none is
        held: the walk before that job is unchanged, so this is the walk in order."""
        order = self.state.order
        cand = [
            i
            for i, job in enumerate(order[: self.cfg.bf_max_job_test])
            if self._limit_reason(job) is None
        ]
        while True:
            jobs = [order[i] for i in cand]
            idx = _backfill.plan(jobs, len(jobs), self._map_params())
            extra: dict[int, list[int]] = {}
            for k in idx:
                if self._limit_reason(jobs[k], extra) is not None:
                    del cand[k]
                    break
                self._count_start(jobs[k], extra)
            else:
                return [cand[k] for k in idx]

    def _segment_map(
        self, free: list[int], extra_ends: list[tuple[float, int, Alloc]]
    ) -> SegmentMap:
        """The backfill map per node-pool segment from ``free`` units now and the running
        jobs (and ``extra_ends``: the jobs this pass started)."""
        st, cfg = self.state, self.cfg
        res = cfg.bf_resolution
        ends = [
            (_round_end(j.start + j.limit, res), j.seq, j.alloc or []) for j in st.running.values()
        ]
        ends.extend(extra_ends)
        ends.sort(key=lambda e: (e[0], e[1]))
        return SegmentMap(
            st.now,
            free,
            ends,
            st.now + cfg.bf_window,
            max(cfg.bf_resolution, 1.0),
            WILL_RUN_WINDOW,
            float(cfg.bf_window_linear),
            self.epoch,
        )

    def _walk_pools(self, stop: int, start_now: bool) -> list[tuple[int, Alloc]] | float | None:
        """The backfill walk on node pools over ``order[:stop]``: with ``start_now``, the
        jobs it starts now (index, allocation); else ``squeue --start`` of ``order[stop]``
        (reservations of every job before it, then its earliest start, or None)."""
        st = self.state
        order = st.order
        now = st.now
        res = self.cfg.bf_resolution
        per_node = self._cpus_per_node
        pools = self._pools
        assert pools is not None
        started: list[tuple[int, Alloc]] = []
        held: list[tuple[float, float, Alloc]] = []
        new_ends: list[tuple[float, int, Alloc]] = []
        free = list(st.seg_free)
        extra: dict[int, list[int]] = {}
        last = stop - 1
        if start_now:  # past the last job that fits now, nothing can start
            last = -1
            for i in range(stop):
                job = order[i]
                if sum(free[s] for s in job.pool) >= job.units:
                    last = i
            if last < 0:
                return started
        smap = self._segment_map(free, new_ends)
        for i in range(last + 1 if start_now else stop + 1):
            job = order[i]
            if start_now and self._run_limits and self._limit_reason(job, extra) is not None:
                continue
            fit = smap.fit(job.pool, job.units, job.limit)
            if not start_now and i == stop:
                return None if fit is None else fit[0]
            if fit is None:
                continue
            t, caps = fit
            if t == now and start_now:
                alloc = spread(job.pool, caps, job.units)
                started.append((i, alloc))
                new_ends.append((_round_end(now + job.limit, res), job.seq, alloc))
                if self._run_limits:
                    self._count_start(job, extra)
                for s, u in alloc:
                    free[s] -= u
                smap = self._segment_map(free, new_ends)
                for r in held:
                    smap.reserve(*r)
            else:
                # a reservation holds whole nodes on a CPU-counted cluster (as the compiled
                # core does, the rounding may take more than is free)
                want = min(-(-job.units // per_node) * per_node, pools.part_size[job.part])
                r = (t, job.limit, spread(job.pool, caps, want))
                held.append(r)
                smap.reserve(*r)
        return started

    def _backfill_pools(self) -> None:
        """:meth:`_backfill_pass` on node pools (sim/pools.py)."""
        order = self.state.order
        stop = min(len(order), self.cfg.bf_max_job_test)
        plan = self._walk_pools(stop, True)
        assert isinstance(plan, list)
        if plan:
            jobs = [(order[i], alloc) for i, alloc in plan]
            for i, _ in reversed(plan):
                del order[i]
            for job, alloc in jobs:
                self._start(job, True, alloc)


def will_run_start(
    units: int,
    limit: float,
    now: float,
    free: int,
    ends: list[tuple[float, int, int]],
    epoch: float,
    *,
    window: float = WILL_RUN_WINDOW,
    linear: float = 0.0,
    horizon: float = 86400.0,
) -> float | None:
    """The earliest start Slurm's will-run test gives one job with no reservations ahead of
    it: ``free`` units now and running jobs' ``ends`` ((expected end, tie, units), sorted),
    times in seconds after the Unix time ``epoch``; ``window=0`` is a plain earliest fit."""
    job = SimJob()
    job.units, job.limit, job.seq, job.static, job.accrue = int(units), float(limit), 0, 0.0, now
    job.user, job.tier, job.prio, job.key = 0, 0, 1, (0, -1, 0)
    params = MapParams(
        now=now,
        free=free,
        ends=ends,
        horizon=now + horizon,
        min_step=1.0,
        per_node=1,
        total=free + sum(e[2] for e in ends),
        window=window,
        linear=linear,
        epoch=epoch,
        resolution=1.0,
    )
    return _backfill.estimate([job], 0, params)


def _round_end(t: float, res: float) -> float:
    """A running job's expected end in the backfill map: rounded up to ``bf_resolution``."""
    if math.isinf(t) or res <= 1:
        return t
    return math.ceil(t / res) * res


class _TraceArrays:
    """The trace as plain arrays the event loop indexes (shared, never copied)."""

    def __init__(self, trace: Trace | None, total_units: int, partitioned: bool) -> None:
        if trace is None or len(trace) == 0:
            self.n = 0
            self.max_id = 0
            self.submit = np.empty(0)
            self.names: list[str] = []
            self.partitions: list[str] = []
            return
        self.n = len(trace)
        self.job_id = trace.job_id
        self.submit = trace.submit.astype(np.float64)
        self.units = np.clip(trace.units, 1, total_units)
        self.limit = trace.limit
        self.runtime = trace.runtime
        self.user = trace.user
        self.group = trace.group
        self.exit_code = trace.exit_code
        self.names = trace.names
        # trace partitions matter only where the config defines partitions
        self.partitions = trace.partitions if partitioned else []
        self.max_id = int(trace.job_id.max())
