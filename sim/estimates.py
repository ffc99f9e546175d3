"""Start estimates: ``squeue --start`` of a pending job, what it would report for a job
submitted now (computed on copies, else by a real probe: snapshot, submit, estimate,
restore), and one job's will-run start (slurmctld's ``job_start_data``/will-run test, run
over the backfill map of sim/_backfill.c)."""

from __future__ import annotations

import math
from bisect import insort

from hpcbase.jobs import JobSpec
from sim import _backfill
from sim.backfill import WILL_RUN_WINDOW
from sim.engine_state import EngineState
from sim.job_scheduler import strict_picks
from sim.mapparams import MapParams
from sim.state import SimJob


class StartEstimates(EngineState):
    """Start estimates (a part of :class:`sim.engine.Simulator`)."""

    total_units: int

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

    def estimate_start_for(self, spec: JobSpec) -> float | None:
        """What ``submit(spec)`` followed by :meth:`estimate_start` would report now (``now``
        itself when the submission starts the job at once), without changing the simulator.

        The job's place in priority order, the scheduling its submission runs at once (a due
        priority refresh, the main passes) and the backfill map are computed on copies. Where
        that is not done, a real probe (snapshot, submit, estimate, restore) answers: under a
        ``MaxSubmitJobsPerUser`` limit, for a job with a dependency, a ``begin`` or a later
        ``submit``, for a submission the real one would refuse, and when that submission's
        main pass would start other jobs on node pools or jobs that others wait on.
        Hypothetical starts do not call ``on_start``."""
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
            (self.limits is not None and self.limits.max_submit_jobs_per_user is not None)
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
        job.eligible, job.accrue = now, self.prio.accrue_time(now)
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
        extra: dict[int, list[int]] = {}  # per-user counts of the jobs the passes start
        stale = self.prio.time_dependent and self._calc_tick(now) > st.prio_tick
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
            idx = self._main_pass_picks(order, depth, free, extra)
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

    def _main_pass_picks(
        self, order: list[SimJob], depth: int, free: int, extra: dict[int, list[int]]
    ) -> list[int]:
        """Indices into ``order`` of the jobs :meth:`_main_pass` would start with ``free``
        units (and the node pools' free units now; ``extra``: per-user counts of the jobs
        started before, under QOS limits, updated in place)."""
        if self._general:
            return [i for i, _ in self._general_picks(order, depth, free, extra)]
        return strict_picks(order, depth, free, len(self.cfg.partitions) <= 1)

    def _refresh_copy(self, order: list[SimJob], started: list[SimJob]) -> bool:
        """:meth:`_refresh_priorities` at the current tick on ``order``, a copy of the queue,
        leaving the jobs' priorities and the fair-share usage as they were (``started``: jobs
        started since, which fair-share counts); True if the order changed."""
        model = self.prio
        tick = self._calc_tick(self.state.now)
        factors = model.fairshare_factors
        if model.w_fairshare > 0:
            share = model.fairshare.copy()
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
                model.whole_age is not None,
            )
        finally:
            for j, prio, key in saved:
                j.prio = prio
                j.key = key


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
