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
from sim.mapparams import MapParams
from sim.priority import PriorityModel
from sim.state import SimJob, SimState
from sim.traces.model import Trace

_SUBMIT, _TIMER, _KICK, _END = 0, 1, 2, 3
# Slurm's will-run test frees running jobs in groups cut at 30-s windows (sim/_backfill.c).
WILL_RUN_WINDOW = 30.0
_NAN = math.nan


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
        self._arrays = _TraceArrays(trace, self.total_units)
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
        job = self._new_job(
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

    def next_event_time(self) -> float:
        """Time of the next submission, job end or timer (inf when none remain)."""
        st = self.state
        t = st.heap[0][0] if st.heap else math.inf
        if st.cursor < self._arrays.n:
            t = min(t, float(self._arrays.submit[st.cursor]))
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
        """Pending and running jobs now, as ``squeue`` shows them."""
        st = self.state
        pend = list(st.pending.values())
        run = list(st.running.values())
        f64, i64 = np.float64, np.int64
        return QueueSnapshot(
            time=st.now,
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
        while True:
            t = heap[0][0] if heap else math.inf
            if st.cursor < n:
                ts = submit_times[st.cursor]
                if ts < t:
                    t = float(ts)
            # periodic passes that could change something (_can_any_start, inlined)
            free = st.free
            if free > 0 and free >= (st.minu if st.minu >= 0 else self._min_pending_units()):
                if bf and st.bf_dirty:
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
                if time_dep:
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
            # 3. the delayed main-scheduler run for batch submissions
            while heap and heap[0][0] == t and heap[0][1] == _KICK:
                heapq.heappop(heap)
                events = True
                st.main_dirty = True
            # 4. the backfill loop: it sees this second's submissions, not its job ends
            if bf and t % bf_int == 0 and st.bf_ran_at != t:
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
                events = True
                st.main_dirty = True
            self._after_events(events)

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
        part = self.cfg.partition(partition) if partition else self._part_default
        job = SimJob()
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
            "",
            0.0,
            int(a.exit_code[i]),
        )

    def _arrive(self, job: SimJob) -> None:
        st = self.state
        st.seq += 1
        job.seq = st.seq
        job.submit = st.now
        st.pending[job.id] = job
        if self.cfg.accrue_always:
            job.accrue = st.now
        st.deps.add(job, self._fin_pos)
        self._check_eligible(job)

    def _check_eligible(self, job: SimJob) -> None:
        """Make a pending job eligible when its begin time and dependencies allow."""
        st = self.state
        now = st.now
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

    def _start(self, job: SimJob, backfill: bool) -> None:
        st = self.state
        now = st.now
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
        job.end = end
        self._push(end, _END, job)
        insort(st.ends, (_round_end(now + job.limit, self.cfg.bf_resolution), job.seq, job.units))
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
        ends = st.ends
        entry = (_round_end(job.start + job.limit, self.cfg.bf_resolution), job.seq, job.units)
        del ends[bisect_left(ends, entry)]
        self.prio.fairshare.change(job.user, -job.units, st.now)
        self._finish(job, state, job.start, st.now)

    def _finish(self, job: SimJob, state: JobState, start: float, end: float) -> None:
        st = self.state
        job.state = state
        self._fin_pos[job.id] = len(self._log)
        self._log.append(
            Record(
                job.id,
                job.tidx,
                job.user,
                job.units,
                job.limit,
                job.submit,
                job.eligible,
                start,
                end,
                state,
                job.backfill,
            )
        )
        deps = st.deps
        if job.id in deps.waiters:
            for w in deps.finished_waiters(job.id):
                if w.id in st.pending:
                    self._check_eligible(w)
        if job.name:
            for w in deps.leave_group(job):
                if w.id in st.pending and math.isnan(w.eligible) and w.has_singleton:
                    self._check_eligible(w)

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

    def _map_params(self) -> MapParams:
        """The backfill map's inputs (sim/mapparams.py). Slurm's map is kept per node, so on
        a CPU-counted cluster a future reservation holds whole nodes (units per node > 1).
        One record per simulator, its changing fields updated per pass (the hot path)."""
        st, p = self.state, self._params
        p.now = st.now
        p.free = st.free
        p.ends = st.ends
        p.horizon = st.now + self.cfg.bf_window
        return p

    def _backfill_pass(self) -> None:
        """Slurm's backfill: walk the first ``bf_max_job_test`` jobs in priority order, start
        every job that fits now without delaying the reservation of any job before it, and
        reserve the others. Start estimates free running jobs in Slurm's will-run groups
        (sim/_backfill.c)."""
        st = self.state
        self._refresh_priorities()
        order = st.order
        idx = _backfill.plan(order, self.cfg.bf_max_job_test, self._map_params())
        if idx:
            started = [order[i] for i in idx]
            for i in reversed(idx):
                del order[i]
            for job in started:
                self._start(job, backfill=True)


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
