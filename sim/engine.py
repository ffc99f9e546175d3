"""The discrete-event Slurm simulator.

Events live on one heap ordered by ``(time, kind, seq)``, but for the delayed main-scheduler
run for batch submissions (at most one is due: ``SimState.kick_at``). At equal times the
documented tie order is: submissions (trace order, then injected jobs in call order), then
eligibility timers (``--begin``, ``after:ID+min``), then the delayed main-scheduler run for
batch submissions, then the backfill scheduler, then job ends, then the priority recalculation
and the main scheduler. The backfill pass of a second thus sees that second's submissions but
not its job ends (real Slurm's backfill loop sees a job end a pass later; the main scheduler
sees it at once). Scheduler passes are skipped when they cannot change anything (nothing
happened since the last one, or no eligible pending job fits in the free units); the outcome
is the same as running them.
Opt-in, :class:`BackfillCycle` replaces the whole-second backfill ticks with Slurm's
free-running loop, delays job ends by a completion latency and may hold every start while a
job completes (sub-second times).

Its parts are mixins of :class:`Simulator`, split as slurmctld's sources are (docs/simulator.md,
"Engine layout"): the job life cycle (sim/job_mgr.py), the main scheduler
(sim/job_scheduler.py), backfill (sim/backfill.py), start estimates (sim/estimates.py) and
the QOS limit checks (sim/acct_policy.py); this module holds the event loop and the public API.
"""

from __future__ import annotations

import heapq
import math
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hpcbase.jobs import JobSpec, JobState
from hpcbase.snapshot import QueueSnapshot
from sim import _backfill
from sim.acct_policy import AcctPolicy
from sim.availability import Availability, availability_steps
from sim.backfill import WILL_RUN_WINDOW, Backfill
from sim.config import SlurmConfig
from sim.dependency import parse_dependency
from sim.engine_state import _END, _KICK, _NAN, _SUBMIT, _TIMER, BackfillCycle
from sim.estimates import StartEstimates, will_run_start
from sim.job_mgr import JobManager, JobView, Record, _TraceArrays
from sim.job_scheduler import MainScheduler
from sim.limits import REASON_SUBMIT, QosLimits, checked_limit_steps
from sim.mapparams import MapParams
from sim.pools import Pools
from sim.priority import PriorityModel
from sim.slurmctld_loops import ControllerLoops
from sim.state import SimState
from sim.traces.model import Trace

# how a job ends, looked up once (an Enum member lookup is slow)
_TIMEOUT, _FAILED, _COMPLETED = JobState.TIMEOUT, JobState.FAILED, JobState.COMPLETED

__all__ = [
    "WILL_RUN_WINDOW",
    "BackfillCycle",
    "JobView",
    "Record",
    "Simulator",
    "will_run_start",
]


#: how far (simulated seconds) a run with ``max_pending`` goes between looks at its queue
RUNAWAY_CHECK_S = 6 * 3600.0


class RunawayReplay(RuntimeError):
    """A run whose pending queue outgrew its bound (``Simulator.run(max_pending=...)``)."""


class Simulator(JobManager, MainScheduler, Backfill, StartEstimates, AcctPolicy, ControllerLoops):
    """Replays a trace (and injected jobs) through Slurm's scheduling rules.

    ``total_units`` defaults to the trace's (``Trace.total_units``), else the config's node or
    CPU count. All times are seconds relative to ``epoch``, the Unix time of t = 0 (default
    ``trace.start_epoch``, else 0): Slurm aligns its backfill start estimates to Unix time.

    Partitions whose ``Nodes=`` split the cluster make node pools (sim/pools.py): a job runs
    on its partition's nodes only. ``limits``: per-user QOS limits (sim/limits.py).
    ``availability``: the units that may be allocated over time (sim/availability.py): of
    the one pool, or with node pools per partition (each a pool of its own that no other
    partition shares). ``limit_steps``: (time, limits) from which other limits on running
    jobs hold (a site that changed its QOS). ``users``: how many users share the fair share
    (Fair Tree ranks each among them; default: the trace's, else 1); ``associations``: the
    user associations of the whole tree, which Fair Tree divides a rank by (default: the
    users; more where the tree holds others, such as root's own). :meth:`run` always
    returns; :meth:`never_started` lists what never ran.
    """

    #: do runs of calc ticks at which nothing else is due in one compiled call
    #: (:meth:`_quiet_ticks`); off, each is a turn of the event loop (the same schedule)
    compiled_quiet_ticks: bool = True
    #: do the life cycle of the common case (trace arrivals, starts, ends) and, where it
    #: applies to arrivals, the event loop compiled (sim/_lifecycle.c, sim/_evloop.c;
    #: :meth:`_life_ctx`); off, in Python (the same schedule)
    compiled_life_cycle: bool = True

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
        availability: Availability | Mapping[str, Availability] | None = None,
        limit_steps: Sequence[tuple[float, QosLimits]] = (),
        users: int = 0,
        associations: int = 0,
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
        n_users = max(n_users, users)
        self.prio = PriorityModel(cfg, self.total_units, unit, n_users)
        self.prio.fairshare.associations = int(associations)
        if cycle is not None:  # usage folded at every decay run, as slurmctld's thread does
            fs = self.prio.fairshare
            fs.decay_runs = (cfg.calc_period, cycle.calc_phase, n_users, self.epoch)
            if float(cfg.calc_period).is_integer():  # the runs share one sub-second offset
                offset = (cycle.calc_phase % 1.0 + self.epoch % 1.0) % 1.0  # exact
                self.prio.whole_age = (self.epoch, offset)
        self._part_default = cfg.partition("")
        self._cpus_per_node = (
            cfg.cpus // cfg.nodes if unit in ("cpus", "procs") and cfg.nodes and cfg.cpus else 1
        )
        self._pools = Pools(cfg, unit, self.total_units) if Pools.active(cfg) else None
        self.limits = limits if limits is not None and limits.any else None
        self._run_limits = self.limits is not None and self.limits.run_limited
        self._limits0 = self.limits
        self._limit_steps = checked_limit_steps(self.limits, limit_steps)
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
            # the map's ends in Slurm's whole seconds, as _map_end puts them
            end_shift=-0.5 if cycle is not None and cycle.whole_seconds else 0.0,
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
        self._av_t, self._av_u, self._av_seg = availability_steps(
            availability, self._pools, self.total_units
        )
        if self._pools is not None:
            self.state.seg_cap = list(self._pools.seg_size)
            self.state.seg_debt = [0] * len(self._pools.seg_size)
        self._epilog_of = dict(cycle.epilogs) if cycle is not None else {}
        if cycle is not None:
            if min(
                cycle.phase, cycle.cost, cycle.end_latency, cycle.completing, cycle.epilog
            ) < 0 or not (cycle.completing_window > 0):
                raise ValueError(f"bad backfill cycle {cycle}")
            self.state.bf_wake = cycle.phase
            if cycle.main_ticks is not None:  # the background loop started then
                self.state.main_last = self.state.full_last = (
                    cycle.main_ticks[2] - cfg.sched_interval
                )
            self._wakes = self._fill_wakes(sorted(cycle.wakes), cfg.bf_interval)
            if self._wakes:
                self.state.bf_wake = self._wakes[0]
        else:
            self._wakes = []
        self._whole = cycle is not None and cycle.whole_seconds
        # the finished-job log, its index by job id and the start hook (typed in JobManager)
        self._log = []
        self._fin_pos = {}
        self.on_start = None

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

    def _pool_step(self, seg: int, units: int) -> None:
        """Segment ``seg`` (one partition's own pool) has ``units`` available from now: a
        drop takes free units first, and what running jobs hold over it becomes a debt
        that their ends pay before their units are free again (Slurm's drain); a rise pays
        the debt first. Free counts never go negative."""
        st = self.state
        change = units - st.seg_cap[seg]
        st.seg_cap[seg] = units
        if change < 0:
            taken = min(-change, st.seg_free[seg])
            st.seg_free[seg] -= taken
            st.free -= taken
            st.seg_debt[seg] += -change - taken
        else:
            paid = min(change, st.seg_debt[seg])
            st.seg_debt[seg] -= paid
            st.seg_free[seg] += change - paid
            st.free += change - paid

    def next_event_time(self) -> float:
        """Time of the next submission, job end or timer (inf when none remain)."""
        st = self.state
        t = st.heap[0][0] if st.heap else math.inf
        if st.cursor < self._arrays.n:
            t = min(t, float(self._arrays.submit[st.cursor]))
        if st.av_at < len(self._av_t):
            t = min(t, self._av_t[st.av_at])
        if st.kick_at > st.now:
            t = min(t, st.kick_at)
        if st.lim_at < len(self._limit_steps):
            t = min(t, self._limit_steps[st.lim_at][0])
        return t

    def advance(self, until: float) -> None:
        """Process every event with time <= ``until``; afterwards ``now == until``."""
        st = self.state
        if until < st.now:
            raise ValueError(f"cannot go back in time ({until} < {st.now})")
        self._loop(until)
        st.now = until

    def run(
        self, *, progress: bool = False, until: float = math.inf, max_pending: int | None = None
    ) -> None:
        """Run until no event remains (or ``until``). With ``max_pending``, raise
        :class:`RunawayReplay` as soon as more jobs than that are pending (looked at every
        ``RUNAWAY_CHECK_S`` of simulated time; the schedule is the same as one run's)."""
        st = self.state
        if not progress and max_pending is None:
            self._loop(until)
            return
        from tqdm import tqdm

        n = self._arrays.n
        with tqdm(total=n, unit="job", desc="replay", mininterval=0.5, disable=not progress) as bar:
            done = 0
            while self.next_event_time() <= until and self.next_event_time() < math.inf:
                target = min(until, self.next_event_time() + RUNAWAY_CHECK_S)
                self._loop(target)
                bar.update(st.cursor - done)
                done = st.cursor
                if max_pending is not None and self.pending_count > max_pending:
                    raise RunawayReplay(
                        f"{self.pending_count} jobs pending at t={self.now / 86400:.1f} days "
                        f"(bound {max_pending})"
                    )

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
        self._set_limits(self._limit_steps[state.lim_at - 1][1] if state.lim_at else self._limits0)
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

    def _loop(self, until: float) -> None:
        """Process the events up to ``until``; a limit step due by then takes effect at its
        time, after the events before it. As in Slurm, a QOS change wakes neither scheduler
        (backfill's ``_more_work`` sees no job, node or partition change): the jobs it frees
        start at the next event that does (a submission, a job's end, a priority change) or
        at the periodic full main pass (``sched_interval``), as measured on real Slurm 22.05
        (``tests/slurm/test_sim_vs_real_slurm.py``)."""
        steps, st = self._limit_steps, self.state
        while st.lim_at < len(steps) and steps[st.lim_at][0] <= until:
            t, limits = steps[st.lim_at]
            self._loop_events(math.nextafter(t, -math.inf))
            st.lim_at += 1
            self._set_limits(limits)
            st.now = max(st.now, t)
            st.full_main_due = True
        self._loop_events(until)

    def _set_limits(self, limits: QosLimits | None) -> None:
        """Hold ``limits`` from now on (a limit step, or a restore)."""
        self.limits = limits
        self._limit_params_made = None

    def _loop_events(self, until: float) -> None:  # noqa: C901 -- the event loop, inlined
        """Process the events up to ``until``; the reference of ``_backfill.run_loop``."""
        life = self._life_ctx()  # the compiled life cycle, where it applies
        arrive = life if life is not None and self._life_arrivals() else None
        if arrive is not None:  # the whole loop compiled (sim/_evloop.c)
            _backfill.run_loop(arrive, self.state, until, self._loop_ctx())
            return
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
        ticks = cycle is not None and cycle.main_ticks is not None
        end_main = cycle is None or (cycle.main_on_end and not ticks)
        mains = cycle.main_wakes if cycle is not None else ()
        n_main = len(mains)
        av_t, av_u, av_seg = self._av_t, self._av_u, self._av_seg
        n_av = len(av_t)
        # ticks with nothing else due are done in one compiled call (_quiet_ticks)
        period = cfg.calc_period
        quiet = self._quiet()
        while True:
            t = heap[0][0] if heap else math.inf
            if st.cursor < n:
                ts = submit_times[st.cursor]
                if ts < t:
                    t = float(ts)
            if st.av_at < n_av and av_t[st.av_at] < t:
                t = av_t[st.av_at]
            # the delayed main-scheduler run for batch submissions (not on the heap: there
            # is at most one); read before this turn's submissions may set the next one
            kick = st.kick_at if st.kick_at > st.now else math.inf
            if kick < t:
                t = kick
            if st.main_at < n_main and mains[st.main_at] < t:
                t = mains[st.main_at]
            tick = math.inf
            if ticks and st.main_at >= n_main:
                tick = self._next_main_tick(bool(heap or st.cursor < n or st.running))
            if tick < t:
                t = tick
            # with jobs pending, every wake-up runs a pass (and drifts) while anything else
            # is still to come; once nothing is, no pass could change anything
            if (
                cycle is not None
                and bf
                and (st.bf_dirty or st.released or (st.pending and t < math.inf))
            ):
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
                if st.full_main_due and sched_int > 0 and st.main_at >= n_main and not ticks:
                    tm = math.ceil(st.now / sched_int) * sched_int
                    if tm <= st.now and st.main_ran_at == st.now:
                        tm += sched_int
                    if tm < t:
                        t = tm
                # once nothing runs and no event is left, priorities can no longer change
                # which job starts: no more ticks, so a job that can never start ends the run
                if time_dep and (
                    heap or st.cursor < n or st.running or st.av_at < n_av or kick < math.inf
                ):
                    tc = st.calc_next
                    if tc < t:
                        if (
                            quiet
                            and st.now < tc <= until
                            and tc % period == 0
                            and not st.main_dirty
                            and not (st.full_main_due and sched_int > 0)
                        ):
                            self._quiet_ticks(tc, t, until)
                            continue
                        # an overdue tick waits out a job's epilog (nothing starts before
                        # st.cg_until, BackfillCycle.completing), or the loop would spin
                        due = max(tc, st.cg_until, st.now)
                        if due < t:
                            t = due
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
            if kick == t:
                events = True
                st.main_dirty = True
            while heap and heap[0][0] == t and heap[0][1] == _KICK:
                heapq.heappop(heap)
                events = True
                st.main_dirty = True
            logged_main = 0  # a measured main-scheduler run now: 1 default depth, 2 full
            if st.main_at < n_main and mains[st.main_at] == t:
                logged_main = 2 if cycle is not None and cycle.main_full[st.main_at] else 1
                st.main_at += 1
            elif tick == t:
                logged_main = self._tick_main_kind(t)
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
            if life is not None and heap and heap[0][0] == t and heap[0][1] == _END:
                _backfill.end_jobs(life, st, t)  # no BackfillCycle: nothing more per end
                events = True
                st.main_dirty = True
            while heap and heap[0][0] == t and heap[0][1] == _END:
                _, _, _, job = heapq.heappop(heap)
                if job.runtime >= 0 and job.id in st.running:  # not cancelled
                    del st.running[job.id]
                    if job.runtime > job.limit:
                        state = _TIMEOUT
                    elif job.exit_code:
                        state = _FAILED
                    else:
                        state = _COMPLETED
                    settled = None if cycle is None else t  # its epilog's end
                    if (
                        cycle is not None
                        and cycle.completing > 0
                        and t - st.bf_pass_at < cycle.completing_window
                    ):
                        # the epilog completes later: no starts until then, then a main pass
                        settled = t + cycle.completing
                        st.cg_until = max(st.cg_until, settled)
                        self._push(st.cg_until, _KICK, None)
                    elif cycle is not None and cycle.epilog > 0:
                        # its node stays COMPLETING until the epilog ends: nothing starts
                        settled = t + self._epilog_of.get(job.name, cycle.epilog)
                        st.cg_until = max(st.cg_until, settled)
                        if end_main:
                            self._push(settled, _KICK, None)
                    self._release(job, state, settled)
                events = True
                st.main_dirty = st.main_dirty or end_main
                if ticks:
                    self._request_main()
            # 6. availability steps (drains, maintenance, nodes lent elsewhere)
            while st.av_at < n_av and av_t[st.av_at] == t:
                seg = av_seg[st.av_at]
                if seg < 0:
                    st.free += av_u[st.av_at] - st.cap
                    st.cap = av_u[st.av_at]
                else:  # one partition's own pool
                    self._pool_step(seg, av_u[st.av_at])
                st.av_at += 1
                events = True
                st.main_dirty = True
            if events:
                st.bf_dirty = True
            if st.main_dirty or st.full_main_due or t >= st.calc_next:
                self._due_passes()
            if logged_main:
                self._measured_main_pass(logged_main == 2)

    def _quiet(self) -> bool:
        """Whether :meth:`_loop` does runs of quiet ticks in one call (:meth:`_quiet_ticks`)."""
        cfg = self.cfg
        period, bf_int, sched_int = cfg.calc_period, cfg.bf_interval, cfg.sched_interval
        return (
            self.compiled_quiet_ticks
            and self.prio.time_dependent
            and self.cycle is None
            and (not cfg.backfill or period % bf_int == 0)
            and not (sched_int > 0 and period % sched_int != 0)
        )

    def _loop_ctx(self) -> tuple[Any, ...]:
        """The tuple the compiled event loop reads (sim/_evloop.c, its EV_* order)."""
        cfg = self.cfg
        return (
            cfg.backfill, float(cfg.bf_interval), float(cfg.sched_interval),
            self.prio.time_dependent, self._quiet(), float(cfg.calc_period),
            float(cfg.batch_sched_delay), self._av_t, self._av_u, self._av_seg,  # not copied:
            _SUBMIT, _TIMER, _KICK,  # a chunked run (max_pending) makes ~20k calls
            self._limit_params() if self._run_limits else None, len(cfg.partitions) <= 1,
            cfg.default_queue_depth, cfg.bf_max_job_test, self._params, float(cfg.bf_window),
            self.prio.n_users,
        )  # fmt: skip

    def _quiet_ticks(self, first: float, before: float, until: float) -> None:
        """The calc ticks from ``first`` on, before ``before`` and up to ``until``, at which
        nothing but the priority refresh is due (no event, no pass waiting, the main
        scheduler clean), done at once (PriorityModel.advance_ticks) up to the first that
        changes the order, which then has the consequences :meth:`_loop` and
        :meth:`_after_events` give a tick: the backfill loop's wake-up is spent (ticks are
        multiples of ``bf_interval``), and a changed order makes both schedulers due."""
        st, cfg = self.state, self.cfg
        period = cfg.calc_period
        limit = before
        if until < math.inf:  # the ticks up to until: multiples of period
            limit = min(before, math.floor(until / period) * period + period / 2)
        tick, changed = self.prio.advance_ticks(st.order, first, limit, float(cfg.max_age))
        st.now = tick
        st.prio_tick = tick
        st.calc_next = tick + period
        if cfg.backfill:
            st.bf_ran_at = tick
        if changed:
            st.bf_dirty = True
            st.full_main_due = True
            if cfg.sched_interval > 0 and tick % cfg.sched_interval == 0:
                self._main_pass(len(st.order))
                st.full_main_due = False
                st.main_ran_at = tick

    def _after_submissions(self) -> None:
        """Slurm may delay scheduling batch submissions by ``batch_sched_delay``: the main
        scheduler runs for them that much later (one run for all submissions in between),
        and the backfill loop may start them first."""
        st = self.state
        delay = self.cfg.batch_sched_delay
        if self._mains_measured():
            return
        if self.cycle is not None and self.cycle.main_ticks is not None:
            self._request_main()  # slurmctld's background loop runs it (_next_main_tick)
            return
        if delay <= 0:
            st.main_dirty = True
        elif st.kick_at <= st.now:
            st.kick_at = st.now + delay  # the event loop runs it (_loop)

    def _after_events(self, events: bool = True) -> None:
        """Events happened now (``events``: any that the backfill scheduler has to look
        at): run the passes that are due."""
        if events:
            self.state.bf_dirty = True
        self._due_passes()

    def _due_passes(self) -> None:
        """The priority refresh and the main scheduler's passes, where due now."""
        st = self.state
        t = st.now
        cfg = self.cfg
        full_main = self._full_main_now()
        if not (st.main_dirty or full_main or t >= st.calc_next):
            return  # nothing due
        if st.released and (st.main_dirty or full_main):
            self._independent_now()
        can_start = self._can_any_start()
        if can_start and t >= st.calc_next and self._refresh_priorities():
            st.bf_dirty = True
            st.full_main_due = True
            full_main = self._full_main_now()
        if st.main_dirty and can_start:
            self._main_pass(cfg.default_queue_depth)
            can_start = self._can_any_start()
        st.main_dirty = False
        if full_main:
            if can_start:
                self._main_pass(len(st.order))
            st.full_main_due = False
            st.main_ran_at = t
