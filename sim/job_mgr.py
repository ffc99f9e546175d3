"""The job life cycle (slurmctld's job_mgr.c): a job is made from the trace or a submitted
spec, arrives or is rejected, becomes eligible (``--begin``, dependencies), starts, takes
and gives back its units, finishes, and leaves its :class:`Record` in the finished-job log."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from hpcbase.config import ConfigError
from hpcbase.jobs import JobSpec, JobState
from sim import _backfill
from sim.config import Partition
from sim.dependency import Dependency
from sim.engine_state import _END, _NAN, _TIMER, EngineState
from sim.limits import REASON_SUBMIT
from sim.pools import Alloc, take
from sim.state import SimJob, SimState
from sim.traces.model import Trace

# the states a job takes here, looked up once (an Enum member lookup is slow)
_PENDING, _RUNNING, _CANCELLED = JobState.PENDING, JobState.RUNNING, JobState.CANCELLED
_TIMEOUT, _FAILED, _COMPLETED = JobState.TIMEOUT, JobState.FAILED, JobState.COMPLETED


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


class JobManager(EngineState):
    """The job life cycle (a part of :class:`sim.engine.Simulator`)."""

    _arrays: _TraceArrays
    _part_default: Partition
    _log: list[Record]  # finished jobs, append-only (restore truncates)
    _fin_pos: dict[int, int]  # job id -> index in _log
    on_start: Callable[[int, float], None] | None  # (job id, now) as each job starts
    compiled_life_cycle: bool  # Simulator's switch of the compiled life cycle
    _life_made: tuple[Any, ...] | None = None  # _life_ctx's tuple, made once

    def _life_ctx(self) -> tuple[Any, ...] | None:
        """The context of the compiled life cycle (sim/_lifecycle.c: starts, ends and, where
        :meth:`_life_arrivals`, trace arrivals), or None where it does not apply: node pools,
        :class:`BackfillCycle`, or switched off (``compiled_life_cycle``)."""
        if not self.compiled_life_cycle or self._pools is not None or self.cycle is not None:
            return None
        if self._life_made is None:
            self._life_made = self._make_life_ctx()
        return self._life_made

    def _life_arrivals(self) -> bool:
        """Whether trace jobs arrive compiled: no trace partitions, no ``MaxTime`` and no
        rejection at submission (per-user submit counts are kept)."""
        lim = self.limits
        return (
            not self._arrays.partitions
            and not self._time_held
            and (lim is None or lim.max_submit_jobs_per_user is None)
        )

    def _make_life_ctx(self) -> tuple[Any, ...]:
        """The tuple sim/_lifecycle.c reads (its LC_* order)."""
        a, prio, part = self._arrays, self.prio, self._part_default
        per = self._limit_params()[5:7] if self._run_limits else (1, 1)
        cols: tuple[list[Any], ...] | None = None
        if a.n:
            names = a.names if isinstance(a.names, list) else list(a.names)
            cols = (a.submit, a.job_id, a.units, a.limit, a.runtime, a.user, a.group)
            cols += (a.exit_code, names)
        # a trace job's static priority part by its units (picklable, as the simulator is)
        static = partial(prio.static_part, part_factor=part.priority_job_factor, qos_factor=0.0)
        return (
            self, _RUNNING, _PENDING, _TIMEOUT, _FAILED, _COMPLETED,
            float(self.cfg.bf_resolution), self._run_limits, per[0], per[1],
            self.limits is not None, float(prio.w_fairshare), self._log, self._fin_pos,
            cols, ({}, static), part.name, part.priority_tier, self._general,
            self.cfg.multifactor, float(prio.w_age), float(self.cfg.max_age), "", _NAN,
        )  # fmt: skip

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
        job.has_singleton = any(d.kind == "singleton" for d in deps) if deps else False
        job.part = part.name
        if self._general:  # only then read (a snapshot of the plain case stays as small)
            job.pool = pools.part_segs[part.name] if pools is not None else ()
            job.alloc = None
        job.tier = part.priority_tier
        job.static = self.prio.static_part(job.units, part.priority_job_factor, qos)
        job.exit_code = exit_code
        job.state = _PENDING
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
            a.job_id[i],
            i,
            a.units[i],
            a.limit[i],
            a.runtime[i],
            a.user[i],
            a.group[i],
            a.names[i] if a.names else "",
            a.submit[i],
            None,
            [],
            a.partitions[i] if a.partitions else "",
            0.0,
            a.exit_code[i],
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
            job.accrue = self.prio.accrue_time(st.now)
        if job.name or job.deps:
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
        job.state = _CANCELLED
        self._log_job(job, st.now, _NAN, _NAN, st.now, _CANCELLED, False)

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

    def _independent_now(self) -> None:
        """A scheduler pass builds its queue (Slurm's ``build_job_queue``): a job whose
        dependency's epilog has ended is independent from now on. Slurm's afterok and
        afterany hold until the dependency is no longer COMPLETING, and ``job_independent``
        sets the job's begin time (its eligible and accrue time) at the first queue built
        after that, not at the end itself (the saved real runs' recorded Eligible)."""
        st = self.state
        if not st.released:
            return
        now, waiting = st.now, []
        for at, job in st.released:
            if at > now:
                waiting.append((at, job))
            elif job.id in st.pending:
                self._check_eligible(job)
        st.released = waiting

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
        if job.deps:
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
            job.accrue = self.prio.accrue_time(now)
        calc = st.prio_tick if st.prio_tick > -math.inf else now  # _prio_calc_time
        job.prio = self.prio.priority(job.static, job.accrue, job.user, calc)
        job.key = (-job.tier, -job.prio, job.seq)
        _backfill.insort(st.order, job)  # insort(st.order, job, key=SimJob.sort_key), compiled
        h = st.min_units
        heapq.heappush(h, (job.units, job.seq, job.id))
        if job.units < st.minu:
            st.minu = job.units
        if len(h) > 2 * len(st.order) + 64:
            self._trim_min_units()

    def _trim_min_units(self) -> None:
        """Drop the entries of jobs no longer waiting from ``min_units``."""
        st = self.state
        st.min_units = [(j.units, j.seq, j.id) for j in st.order]
        heapq.heapify(st.min_units)

    def _finished_record(self, job_id: int) -> Record | None:
        pos = self._fin_pos.get(job_id)
        return None if pos is None else self._log[pos]

    def _start(self, job: SimJob, backfill: bool, alloc: Alloc | None = None) -> None:
        st = self.state
        now = st.now
        if self._general:
            self._take(job, alloc)
        jid, units, limit = job.id, job.units, job.limit
        job.state = _RUNNING
        job.start = now
        job.backfill = backfill
        st.free -= units
        if st.free < 0:
            raise AssertionError(f"over-allocation starting job {jid}")
        del st.pending[jid]
        st.minu = -1
        st.running[jid] = job
        runtime = job.runtime
        end = now + (limit if limit < runtime else runtime)  # min(runtime, limit)
        if self.cycle is not None:
            end += self.cycle.end_latency
        job.end = end
        st.seq += 1
        heapq.heappush(st.heap, (end, _END, st.seq, job))
        insort(st.ends, (self._map_end(now, limit), job.seq, units))
        if self.prio.w_fairshare:  # usage only matters to a fair-share factor
            self.prio.fairshare.change(job.user, units, now)
        if backfill:
            st.n_backfilled += 1
        if jid in st.deps.waiters:
            for w in st.deps.started(job.id):
                if w.id in st.pending:
                    self._check_eligible(w)
        if self.on_start is not None:
            self.on_start(job.id, now)

    def _start_picked(self, picks: Sequence[tuple[int, Alloc | None]], backfill: bool) -> None:
        """Take the jobs a pass picked (indices into the queue, ascending, with their
        allocations) out of the queue, then start them in that order."""
        order = self.state.order
        jobs = [(order[i], alloc) for i, alloc in picks]
        for i, _ in reversed(picks):
            del order[i]
        for job, alloc in jobs:
            self._start(job, backfill, alloc)

    def _start_indices(self, idx: list[int], backfill: bool) -> None:
        """:meth:`_start_picked` of jobs without allocations, by their indices alone
        (compiled where no start hook or dependency waits on a start)."""
        life = self._life_ctx()
        if life is not None and self.on_start is None and not self.state.deps.waiters:
            _backfill.start_jobs(life, self.state, idx, backfill)
            return
        order = self.state.order
        jobs = [order[i] for i in idx]
        for i in reversed(idx):
            del order[i]
        for job in jobs:
            self._start(job, backfill)

    def _release(self, job: SimJob, state: JobState, settled: float | None = None) -> None:
        """A running job ended (completed, failed, timed out or cancelled). ``settled``:
        when its epilog ends, where the jobs waiting on it wait for that (BackfillCycle)."""
        st = self.state
        st.free += job.units
        if self._general:
            self._give_back(job)
        ends = st.ends
        entry = (self._map_end(job.start, job.limit), job.seq, job.units)
        del ends[bisect_left(ends, entry)]
        if self.prio.w_fairshare:
            self.prio.fairshare.change(job.user, -job.units, st.now)
        self._finish(job, state, job.start, st.now, settled)

    def _finish(
        self, job: SimJob, state: JobState, start: float, end: float, settled: float | None = None
    ) -> None:
        """Log a job that left the queue and wake the jobs that wait on it: at once, or from
        the first scheduler pass at or after ``settled`` (:meth:`_independent_now`)."""
        st = self.state
        if self.limits is not None:
            self._use(job.user)[3] -= 1
        job.state = state
        self._log_job(job, job.submit, job.eligible, start, end, state, job.backfill)
        deps = st.deps
        if job.id in deps.waiters:
            for w in deps.finished_waiters(job.id):
                if w.id in st.pending:
                    if settled is None:
                        self._check_eligible(w)
                    else:
                        st.released.append((settled, w))
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
            debt = st.seg_debt
            for s, u in job.alloc:
                paid = min(debt[s], u) if debt[s] else 0
                if paid:  # a drained pool holds these units back (Simulator._pool_step)
                    debt[s] -= paid
                    st.free -= paid
                st.seg_free[s] += u - paid
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


_backfill.register_life(SimJob, Record, SimState, _END)  # the compiled life cycle's slots


class _TraceArrays:
    """The trace's columns as Python lists the event loop indexes: an item is a Python int
    or float already, with no NumPy scalar to box and convert per job."""

    def __init__(self, trace: Trace | None, total_units: int, partitioned: bool) -> None:
        self.submit: list[float] = []
        self.names: list[str] = []
        self.partitions: list[str] = []
        if trace is None or len(trace) == 0:
            self.n = 0
            self.max_id = 0
            return
        self.n = len(trace)
        self.job_id: list[int] = trace.job_id.astype(np.int64).tolist()
        self.submit = trace.submit.astype(np.float64).tolist()
        self.units: list[int] = np.clip(trace.units, 1, total_units).astype(np.int64).tolist()
        self.limit: list[float] = trace.limit.astype(np.float64).tolist()
        self.runtime: list[float] = trace.runtime.astype(np.float64).tolist()
        self.user: list[int] = trace.user.astype(np.int64).tolist()
        self.group: list[int] = trace.group.astype(np.int64).tolist()
        self.exit_code: list[int] = trace.exit_code.astype(np.int64).tolist()
        self.names = trace.names
        # trace partitions matter only where the config defines partitions
        self.partitions = trace.partitions if partitioned else []
        self.max_id = int(trace.job_id.max())
