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
"""

from __future__ import annotations

import heapq
import math
import pickle
from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hpcbase.jobs import JobSpec, JobState
from hpcbase.snapshot import QueueSnapshot
from sim import _backfill
from sim.config import SlurmConfig
from sim.dependency import Dependency, parse_dependency
from sim.priority import PriorityModel
from sim.traces.model import Trace

_SUBMIT, _TIMER, _KICK, _END = 0, 1, 2, 3
# Slurm's will-run test frees running jobs in groups cut at 30-s windows (sim/_backfill.c).
WILL_RUN_WINDOW = 30.0
_NAN = math.nan


class _Job:
    """A job inside the simulator (pending or running)."""

    __slots__ = (
        "id", "seq", "tidx", "units", "limit", "runtime", "user", "group", "name",
        "submit", "begin", "deps", "part", "tier", "static", "exit_code", "state",
        "eligible", "accrue", "start", "end", "prio", "key", "backfill", "has_singleton",
    )

    id: int
    seq: int
    tidx: int
    units: int
    limit: float
    runtime: float
    user: int
    group: int
    name: str
    submit: float
    begin: float | None
    deps: list[Dependency]
    has_singleton: bool
    part: str
    tier: int
    static: float
    exit_code: int
    state: JobState
    eligible: float
    accrue: float
    start: float
    end: float
    prio: int
    key: tuple[int, int, int]
    backfill: bool

    def sort_key(self) -> tuple[int, int, int]:
        return self.key


_backfill.register(_Job)


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
    """

    def __init__(
        self,
        trace: Trace | None,
        config: SlurmConfig | None = None,
        *,
        total_units: int | None = None,
        seed: int = 0,
        epoch: float | None = None,
    ) -> None:
        self.cfg = cfg = config or SlurmConfig()
        self.trace = trace
        unit = trace.unit if trace is not None else (cfg.units or "nodes")
        if total_units is None:
            total_units = trace.total_units if trace is not None and trace.total_units else None
        if total_units is None:
            total_units = cfg.cpus if unit in ("cpus", "procs") else cfg.nodes
        if not total_units or total_units <= 0:
            raise ValueError("cluster size unknown: pass total_units (the trace and config give none)")
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
        self._arrays = _TraceArrays(trace, self.total_units)
        self._next_id = self._arrays.max_id + 1
        # --- mutable state (everything below is captured by snapshot()) ---
        self.now = 0.0
        self.free = self.total_units
        self._cursor = 0  # next trace job to arrive
        self._heap: list[tuple[float, int, int, Any]] = []  # payload: a _Job, or None for kicks
        self._seq = 0
        self._pending: dict[int, _Job] = {}
        self._running: dict[int, _Job] = {}
        self._ends: list[tuple[float, int, int]] = []  # (rounded expected end, seq, units), sorted
        self._order: list[_Job] = []  # eligible pending jobs by (tier, priority, seq)
        self._min_units: list[tuple[int, int, int]] = []  # heap of (units, seq, id), lazy
        self._minu = -1  # its valid minimum, cached; -1 when unknown
        self._waiters: dict[int, list[_Job]] = {}  # target id -> jobs whose deps name it
        self._singleton: dict[tuple[int, str], list[_Job]] = {}
        self._log: list[Record] = []  # finished jobs, append-only (restore truncates)
        self._fin_pos: dict[int, int] = {}  # job id -> index in _log
        self._prio_tick = -math.inf
        # the next PriorityCalcPeriod tick (due at once when priorities are time dependent)
        self._calc_next = -math.inf if self.prio.time_dependent else math.inf
        self._main_dirty = False
        self._bf_dirty = False
        self._full_main_due = False
        self.n_backfilled = 0
        self.on_start: Callable[[int, float], None] | None = None

    # ------------------------------------------------------------------ public API
    def submit(self, spec: JobSpec) -> int:
        """Inject a job (e.g. the next job of a chain); returns its job id."""
        jid = spec.job_id if spec.job_id is not None else self._next_id
        if self._known(jid):
            raise ValueError(f"job id {jid} already exists")
        self._next_id = max(self._next_id, jid + 1)
        submit = self.now if spec.submit is None else float(spec.submit)
        if submit < self.now:
            raise ValueError(f"submit time {submit} is in the past (now {self.now})")
        if spec.units <= 0 or spec.units > self.total_units:
            raise ValueError(f"job asks for {spec.units} units; the cluster has {self.total_units}")
        if spec.limit <= 0:
            raise ValueError("time limit must be > 0")
        deps = parse_dependency(spec.dependency)
        for d in deps:
            if d.target is not None and not self._known(d.target):
                raise ValueError(f"dependency on unknown job {d.target}")
        job = self._new_job(
            jid, -1, spec.units, spec.limit, spec.runtime, spec.user, spec.group, spec.name,
            submit, spec.begin, deps, spec.partition, spec.qos_factor, spec.exit_code,
        )
        if submit <= self.now:
            self._arrive(job)
            self._after_submissions()
            self._after_events()
        else:
            self._push(submit, _SUBMIT, job)
        return jid

    def cancel(self, job_id: int) -> None:
        """Cancel a pending or running job (``scancel``)."""
        job = self._pending.get(job_id)
        if job is not None:
            self._remove_pending(job)
            self._finish(job, JobState.CANCELLED, _NAN, self.now)
        elif job_id in self._running:
            job = self._running.pop(job_id)
            job.runtime = -1.0  # marks the heap entry stale
            self._release(job, JobState.CANCELLED)
        else:
            raise KeyError(f"job {job_id} is neither pending nor running")
        self._after_events()

    def job(self, job_id: int) -> JobView:
        """The job's current view; raises KeyError for an unknown id."""
        job = self._pending.get(job_id) or self._running.get(job_id)
        if job is not None:
            return self._view(job, job.state)
        pos = self._fin_pos.get(job_id)
        if pos is not None:
            r = self._log[pos]
            ran = r.end - r.start if not math.isnan(r.start) else 0.0
            return JobView(
                job_id, r.state, r.units, r.limit, ran, r.user, "", r.submit, r.eligible,
                r.start, r.end, 0, r.backfill,
            )
        raise KeyError(f"unknown job {job_id}")

    def next_event_time(self) -> float:
        """Time of the next submission, job end or timer (inf when none remain)."""
        t = self._heap[0][0] if self._heap else math.inf
        if self._cursor < self._arrays.n:
            t = min(t, float(self._arrays.submit[self._cursor]))
        return t

    def advance(self, until: float) -> None:
        """Process every event with time <= ``until``; afterwards ``now == until``."""
        if until < self.now:
            raise ValueError(f"cannot go back in time ({until} < {self.now})")
        self._loop(until)
        self.now = until

    def run(self, *, progress: bool = False, until: float = math.inf) -> None:
        """Run until no event remains (or ``until``)."""
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
                bar.update(self._cursor - done)
                done = self._cursor

    def queue_snapshot(self) -> QueueSnapshot:
        """Pending and running jobs now, as ``squeue`` shows them."""
        pend = list(self._pending.values())
        run = list(self._running.values())
        f64, i64 = np.float64, np.int64
        return QueueSnapshot(
            time=self.now,
            total_units=self.total_units,
            pend_id=np.fromiter((j.id for j in pend), i64, len(pend)),
            pend_units=np.fromiter((j.units for j in pend), i64, len(pend)),
            pend_limit=np.fromiter((j.limit for j in pend), f64, len(pend)),
            pend_submit=np.fromiter((j.submit for j in pend), f64, len(pend)),
            pend_eligible=np.fromiter((j.eligible for j in pend), f64, len(pend)),
            run_id=np.fromiter((j.id for j in run), i64, len(run)),
            run_units=np.fromiter((j.units for j in run), i64, len(run)),
            run_limit=np.fromiter((j.limit for j in run), f64, len(run)),
            run_start=np.fromiter((j.start for j in run), f64, len(run)),
        )

    def estimate_start(self, job_id: int) -> float | None:
        """Expected start of a pending job as ``squeue --start`` reports it: reservations
        of every higher-priority job in the backfill map, then this job's earliest fit.
        None when the job is not eligible yet or no start lies within ``bf_window``."""
        job = self._pending.get(job_id)
        if job is None:
            if job_id in self._running:
                return self._running[job_id].start
            raise KeyError(f"job {job_id} is not pending")
        if math.isnan(job.eligible):
            return None
        self._refresh_priorities()
        return _backfill.estimate(self._order, self._order.index(job), *self._map_args())

    def snapshot(self) -> bytes:
        """The whole mutable state, cheaply (O(live jobs)); see :meth:`restore`."""
        state = {k: getattr(self, k) for k in _STATE_FIELDS}
        state["_fairshare"] = self.prio.fairshare
        state["_log_len"] = len(self._log)
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, blob: bytes) -> None:
        """Return to a state taken by :meth:`snapshot` (of this or another simulator over
        the same trace and config, e.g. in a worker process).

        The finished-job log is not part of a snapshot: restoring truncates this
        simulator's log to the snapshot's length, and a simulator whose log is shorter (a
        fresh one, or one restored to an earlier point) simply lacks the records of jobs
        that finished before the snapshot."""
        state = pickle.loads(blob)
        n = state.pop("_log_len")
        self.prio.fairshare = state.pop("_fairshare")
        for k, v in state.items():
            setattr(self, k, v)
        for rec in self._log[n:]:
            del self._fin_pos[rec.job_id]
        del self._log[n:]

    @property
    def records(self) -> list[Record]:
        """Finished jobs, in order of finishing."""
        return self._log

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    @property
    def running_count(self) -> int:
        return len(self._running)

    # ------------------------------------------------------------------ event loop
    def _push(self, t: float, kind: int, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, kind, self._seq, payload))

    def _loop(self, until: float) -> None:
        arrays = self._arrays
        submit_times = arrays.submit
        n = arrays.n
        heap = self._heap
        cfg = self.cfg
        bf = cfg.backfill
        bf_int = cfg.bf_interval
        sched_int = cfg.sched_interval
        time_dep = self.prio.time_dependent
        while True:
            t = heap[0][0] if heap else math.inf
            if self._cursor < n:
                ts = submit_times[self._cursor]
                if ts < t:
                    t = float(ts)
            # periodic passes that could change something (_can_any_start, inlined)
            free = self.free
            if free > 0 and free >= (self._minu if self._minu >= 0 else self._min_pending_units()):
                if bf and self._bf_dirty:
                    tb = math.ceil(self.now / bf_int) * bf_int
                    if tb <= self.now and self._bf_ran_at == self.now:
                        tb += bf_int
                    if tb < t:
                        t = tb
                if self._full_main_due and sched_int > 0:
                    tm = math.ceil(self.now / sched_int) * sched_int
                    if tm <= self.now and self._main_ran_at == self.now:
                        tm += sched_int
                    if tm < t:
                        t = tm
                if time_dep:
                    tc = self._calc_next
                    if tc < t:
                        t = tc if tc > self.now else self.now
            if t > until or t == math.inf:
                return
            self.now = t
            events = False
            submitted = False
            # 1. submissions: trace jobs, then injected ones
            while self._cursor < n and submit_times[self._cursor] == t:
                self._arrive(self._trace_job(self._cursor))
                self._cursor += 1
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
                if job.id in self._pending:
                    self._check_eligible(job)
                events = True
                self._main_dirty = True
            # 3. the delayed main-scheduler run for batch submissions
            while heap and heap[0][0] == t and heap[0][1] == _KICK:
                heapq.heappop(heap)
                events = True
                self._main_dirty = True
            # 4. the backfill loop: it sees this second's submissions, not its job ends
            if bf and t % bf_int == 0 and self._bf_ran_at != t:
                self._bf_ran_at = t
                if self._bf_dirty or events:
                    if self._can_any_start():
                        self._backfill_pass()
                    self._bf_dirty = False
                    events = False
            # 5. job ends
            while heap and heap[0][0] == t and heap[0][1] == _END:
                _, _, _, job = heapq.heappop(heap)
                if job.runtime >= 0 and job.id in self._running:  # not cancelled
                    del self._running[job.id]
                    if job.runtime > job.limit:
                        state = JobState.TIMEOUT
                    elif job.exit_code:
                        state = JobState.FAILED
                    else:
                        state = JobState.COMPLETED
                    self._release(job, state)
                events = True
                self._main_dirty = True
            self._after_events(events)

    def _after_submissions(self) -> None:
        """Slurm may delay scheduling batch submissions by ``batch_sched_delay``: the main
        scheduler runs for them that much later (one run for all submissions in between),
        and the backfill loop may start them first."""
        delay = self.cfg.batch_sched_delay
        if delay <= 0:
            self._main_dirty = True
        elif self._kick_at <= self.now:
            self._kick_at = self.now + delay
            self._push(self._kick_at, _KICK, None)

    def _after_events(self, events: bool = True) -> None:
        t = self.now
        cfg = self.cfg
        if events:
            self._bf_dirty = True
        full_main = self._full_main_due and cfg.sched_interval > 0 and t % cfg.sched_interval == 0
        if not (self._main_dirty or full_main or t >= self._calc_next):
            return  # nothing due
        can_start = self._can_any_start()
        if can_start and t >= self._calc_next and self._refresh_priorities():
            self._bf_dirty = True
            self._full_main_due = True
            full_main = cfg.sched_interval > 0 and t % cfg.sched_interval == 0
        if self._main_dirty and can_start:
            self._main_pass(cfg.default_queue_depth)
            can_start = self._can_any_start()
        self._main_dirty = False
        if full_main:
            if can_start:
                self._main_pass(len(self._order))
            self._full_main_due = False
            self._main_ran_at = t

    _bf_ran_at = -math.inf
    _kick_at = -math.inf
    _main_ran_at = -math.inf

    # ------------------------------------------------------------------ job lifecycle
    def _new_job(
        self, jid: int, tidx: int, units: int, limit: float, runtime: float, user: int,
        group: int, name: str, submit: float, begin: float | None, deps: list[Dependency],
        partition: str, qos: float, exit_code: int,
    ) -> _Job:
        part = self.cfg.partition(partition) if partition else self._part_default
        job = _Job()
        job.id = jid
        job.seq = 0
        job.tidx = tidx
        job.units = int(units)
        job.limit = float(min(limit, part.max_time))
        job.runtime = float(runtime)
        job.user = int(user)
        job.group = int(group)
        job.name = name
        job.submit = submit
        job.begin = begin
        job.deps = deps
        job.has_singleton = any(d.kind == "singleton" for d in deps)
        job.part = part.name
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

    def _trace_job(self, i: int) -> _Job:
        a = self._arrays
        return self._new_job(
            int(a.job_id[i]), i, int(a.units[i]), float(a.limit[i]), float(a.runtime[i]),
            int(a.user[i]), int(a.group[i]), a.names[i] if a.names else "",
            float(a.submit[i]), None, [], "", 0.0, int(a.exit_code[i]),
        )

    def _arrive(self, job: _Job) -> None:
        self._seq += 1
        job.seq = self._seq
        job.submit = self.now
        self._pending[job.id] = job
        if self.cfg.accrue_always:
            job.accrue = self.now
        if job.name:
            self._singleton.setdefault((job.user, job.name), []).append(job)
        for d in job.deps:
            if d.kind == "singleton":
                continue
            if d.target is not None and d.target not in self._fin_pos:
                self._waiters.setdefault(d.target, []).append(job)
        self._check_eligible(job)

    def _check_eligible(self, job: _Job) -> None:
        """Make a pending job eligible when its begin time and dependencies allow."""
        now = self.now
        if job.begin is not None and job.begin > now:
            self._push(job.begin, _TIMER, job)
            return
        wake = -math.inf
        for d in job.deps:
            ok, at = self._dep_satisfied(job, d)
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
        insort(self._order, job, key=_Job.sort_key)
        h = self._min_units
        heapq.heappush(h, (job.units, job.seq, job.id))
        if job.units < self._minu:
            self._minu = job.units
        if len(h) > 2 * len(self._order) + 64:  # drop entries of jobs no longer waiting
            self._min_units = [(j.units, j.seq, j.id) for j in self._order]
            heapq.heapify(self._min_units)

    def _prio_calc_time(self) -> float:
        return self._prio_tick if self._prio_tick > -math.inf else self.now

    def _dep_satisfied(self, job: _Job, d: Dependency) -> tuple[bool, float | None]:
        """(satisfied, time it will be satisfied if known)."""
        if d.kind == "singleton":
            peers = self._singleton.get((job.user, job.name), [])
            for other in peers:
                if other is job:
                    return True, None
                if other.state in (JobState.PENDING, JobState.RUNNING):
                    return False, None
            return True, None
        target = d.target
        assert target is not None  # every kind but singleton names a job
        pos = self._fin_pos.get(target)
        fin = None if pos is None else self._log[pos]
        if d.kind == "after":
            run = self._running.get(target)
            start = run.start if run is not None else (fin.start if fin else _NAN)
            if fin is not None and math.isnan(start):
                return True, None  # cancelled before it started
            if math.isnan(start):
                return False, None
            at = start + d.minutes * 60.0
            return (at <= self.now), at
        if fin is None:
            return False, None
        state = fin.state
        if d.kind == "afterany":
            return True, None
        if d.kind == "afterok":
            return state == JobState.COMPLETED, None
        if d.kind == "afternotok":
            return state != JobState.COMPLETED, None
        return False, None

    def _start(self, job: _Job, backfill: bool) -> None:
        now = self.now
        job.state = JobState.RUNNING
        job.start = now
        job.backfill = backfill
        self.free -= job.units
        if self.free < 0:
            raise AssertionError(f"over-allocation starting job {job.id}")
        del self._pending[job.id]
        self._minu = -1
        self._running[job.id] = job
        end = now + min(job.runtime, job.limit)
        job.end = end
        self._push(end, _END, job)
        insort(self._ends, (_round_end(now + job.limit, self.cfg.bf_resolution), job.seq, job.units))
        self.prio.fairshare.change(job.user, job.units, now)
        if backfill:
            self.n_backfilled += 1
        for w in self._waiters.get(job.id, ()):
            if w.id in self._pending and any(d.kind == "after" for d in w.deps):
                self._check_eligible(w)
        if self.on_start is not None:
            self.on_start(job.id, now)

    def _release(self, job: _Job, state: JobState) -> None:
        """A running job ended (completed, failed, timed out or cancelled)."""
        self.free += job.units
        ends = self._ends
        entry = (_round_end(job.start + job.limit, self.cfg.bf_resolution), job.seq, job.units)
        del ends[bisect_left(ends, entry)]
        self.prio.fairshare.change(job.user, -job.units, self.now)
        self._finish(job, state, job.start, self.now)

    def _finish(self, job: _Job, state: JobState, start: float, end: float) -> None:
        job.state = state
        self._fin_pos[job.id] = len(self._log)
        self._log.append(
            Record(job.id, job.tidx, job.user, job.units, job.limit, job.submit, job.eligible,
                   start, end, state, job.backfill)
        )
        for w in self._waiters.pop(job.id, ()):
            if w.id in self._pending:
                self._check_eligible(w)
        if job.name:
            key = (job.user, job.name)
            peers = self._singleton[key]
            peers.remove(job)
            if not peers:
                del self._singleton[key]
            for w in peers:
                if w.id in self._pending and math.isnan(w.eligible) and w.has_singleton:
                    self._check_eligible(w)

    def _remove_pending(self, job: _Job) -> None:
        del self._pending[job.id]
        self._minu = -1
        if not math.isnan(job.eligible):
            self._order.remove(job)

    def _known(self, jid: int) -> bool:
        return jid in self._pending or jid in self._running or jid in self._fin_pos

    def _view(self, job: _Job, state: JobState) -> JobView:
        return JobView(
            job.id, state, job.units, job.limit, job.runtime, job.user, job.name, job.submit,
            job.eligible, job.start, job.end, job.prio, job.backfill,
        )

    # ------------------------------------------------------------------ scheduling
    def _min_pending_units(self) -> int:
        """Units of the smallest eligible pending job (cached until a pending job leaves)."""
        if self._minu >= 0:
            return self._minu
        h = self._min_units
        pending = self._pending
        while h:
            units, seq, jid = h[0]
            job = pending.get(jid)
            if job is not None and job.seq == seq and not math.isnan(job.eligible):
                self._minu = units
                return units
            heapq.heappop(h)
        self._minu = 1 << 62
        return self._minu

    def _can_any_start(self) -> bool:
        return self.free > 0 and self.free >= self._min_pending_units()

    def _refresh_priorities(self) -> bool:
        """Recompute priorities as of the latest calc tick; True if the order changed."""
        if not self.prio.time_dependent:
            return False
        period = self.cfg.calc_period
        tick = math.floor(self.now / period) * period
        if tick <= self._prio_tick:
            return False
        self._prio_tick = tick
        self._calc_next = tick + period
        model = self.prio
        model.begin_tick(tick)
        return _backfill.refresh(
            self._order, tick, float(model.w_age), float(self.cfg.max_age),
            float(model.w_fairshare), model.fairshare_factors,
        )

    def _main_pass(self, depth: int) -> None:
        """Strict priority order: start what fits; a job that does not fit blocks its
        partition for the rest of the pass."""
        order = self._order
        blocked: set[str] = set()
        started: list[int] = []
        free = self.free
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

    def _map_args(self) -> tuple:
        """The backfill map's inputs (sim/_backfill.c): now, free units, running jobs'
        expected ends, horizon (``bf_window``), resolution, units per node, cluster size,
        Slurm's first will-run window (30 s), ``bf_window_linear``, the Unix time of t = 0,
        and ``bf_resolution`` again for the ends of jobs the pass starts. Slurm's map is kept
        per node, so on a CPU-counted cluster a future reservation holds whole nodes (units
        per node > 1)."""
        now, cfg = self.now, self.cfg
        return (
            now, self.free, self._ends, now + cfg.bf_window, max(cfg.bf_resolution, 1.0),
            self._cpus_per_node, self.total_units, WILL_RUN_WINDOW, float(cfg.bf_window_linear),
            self.epoch, float(cfg.bf_resolution),
        )

    def _backfill_pass(self) -> None:
        """Slurm's backfill: walk the first ``bf_max_job_test`` jobs in priority order, start
        every job that fits now without delaying the reservation of any job before it, and
        reserve the others. Start estimates free running jobs in Slurm's will-run groups
        (sim/_backfill.c)."""
        self._refresh_priorities()
        order = self._order
        idx = _backfill.plan(order, self.cfg.bf_max_job_test, *self._map_args())
        if idx:
            started = [order[i] for i in idx]
            for i in reversed(idx):
                del order[i]
            for job in started:
                self._start(job, backfill=True)


def will_run_start(
    units: int, limit: float, now: float, free: int, ends: list[tuple[float, int, int]],
    epoch: float, *, window: float = WILL_RUN_WINDOW, linear: float = 0.0,
    horizon: float = 86400.0,
) -> float | None:
    """The earliest start Slurm's will-run test gives one job with no reservations ahead of
    it: ``free`` units now and running jobs' ``ends`` ((expected end, tie, units), sorted),
    times in seconds after the Unix time ``epoch``; ``window=0`` is a plain earliest fit."""
    job = _Job()
    job.units, job.limit, job.seq, job.static, job.accrue = int(units), float(limit), 0, 0.0, now
    job.user, job.tier, job.prio, job.key = 0, 0, 1, (0, -1, 0)
    return _backfill.estimate(
        [job], 0, now, free, ends, now + horizon, 1.0, 1, free + sum(e[2] for e in ends),
        window, linear, epoch, 1.0,
    )


def _round_end(t: float, res: float) -> float:
    """A running job's expected end in the backfill map: rounded up to ``bf_resolution``."""
    if math.isinf(t) or res <= 1:
        return t
    return math.ceil(t / res) * res


_STATE_FIELDS = (
    "now", "free", "_cursor", "_heap", "_seq", "_pending", "_running", "_ends", "_order", "_min_units", "_minu",
    "_waiters", "_singleton", "_prio_tick", "_calc_next", "_main_dirty", "_bf_dirty",
    "_full_main_due", "n_backfilled", "_next_id", "_bf_ran_at", "_main_ran_at", "_kick_at",
)


class _TraceArrays:
    """The trace as plain arrays the event loop indexes (shared, never copied)."""

    def __init__(self, trace: Trace | None, total_units: int) -> None:
        if trace is None or len(trace) == 0:
            self.n = 0
            self.max_id = 0
            self.submit = np.empty(0)
            self.names: list[str] = []
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
        self.max_id = int(trace.job_id.max())
