"""The main scheduler (slurmctld's job_scheduler.c, ``schedule()``): strict priority order
over the queue's first ``default_queue_depth`` jobs or all of them, a job that does not fit
blocking its partition; the priority refresh at each ``PriorityCalcPeriod`` tick
(priority/multifactor's decay thread, compiled in sim/_backfill.c); whether any pending job
could start at all."""

from __future__ import annotations

import heapq
import math

from sim import _backfill
from sim.engine_state import EngineState
from sim.pools import Alloc, take
from sim.state import SimJob


class MainScheduler(EngineState):
    """The main scheduler's passes and the priority refresh (a part of
    :class:`sim.engine.Simulator`)."""

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
        free, minu = st.free, st.minu
        return free > 0 and free >= (minu if minu >= 0 else self._min_pending_units())

    def _calc_tick(self, now: float) -> float:
        """The latest ``PriorityCalcPeriod`` tick at or before ``now``: a multiple of the
        period, shifted by the decay thread's phase under :class:`BackfillCycle`."""
        period = self.cfg.calc_period
        phase = self.cycle.calc_phase if self.cycle is not None else 0.0
        return math.floor((now - phase) / period) * period + phase

    def _refresh_priorities(self) -> bool:
        """Recompute priorities as of the latest calc tick; True if the order changed."""
        st = self.state
        if not self.prio.time_dependent:
            return False
        period = self.cfg.calc_period
        tick = self._calc_tick(st.now)
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
            model.whole_age is not None,
        )

    def _prio_calc_time(self) -> float:
        st = self.state
        return st.prio_tick if st.prio_tick > -math.inf else st.now

    def _main_pass(self, depth: int) -> None:
        """Strict priority order: start what fits; a job that does not fit blocks its
        partition for the rest of the pass."""
        if self._general:
            self._main_pass_general(depth)
            return
        st = self.state
        started = strict_picks(st.order, depth, st.free, len(self.cfg.partitions) <= 1)
        if started:
            self._start_indices(started, backfill=False)

    def _main_pass_general(self, depth: int) -> None:
        """:meth:`_main_pass` on node pools or under QOS limits: a job held by a limit is
        skipped and blocks nothing; a job fits when its partition's nodes hold it."""
        st = self.state
        if self._pools is None and len(self.cfg.partitions) <= 1:
            # one partition, no pools, so QOS limits: _general_picks' compiled case
            picks = _backfill.limited_picks(
                st.order, depth, st.free, st.user_use, {}, self._limit_params()
            )
            if picks:
                self._start_indices(picks, backfill=False)
            return
        started = self._general_picks(st.order, depth, st.free, {})
        if started:
            self._start_picked(started, backfill=False)

    def _general_picks(
        self, order: list[SimJob], depth: int, free: int, extra: dict[int, list[int]]
    ) -> list[tuple[int, Alloc | None]]:
        """The jobs among the first ``depth`` of ``order`` that :meth:`_main_pass_general`
        starts with ``free`` units and the pools' free nodes now, with their allocations;
        ``extra``: per-user counts of jobs started before this pass (updated in place)."""
        pools = self._pools
        # one partition and no pools: a job that does not fit ends the pass
        single = pools is None and len(self.cfg.partitions) <= 1
        if single and self._run_limits:  # compiled (sim/_backfill.c)
            picks = _backfill.limited_picks(
                order, depth, free, self.state.user_use, extra, self._limit_params()
            )
            return [(i, None) for i in picks]
        seg_free = list(self.state.seg_free)
        blocked: set[str] = set()
        started: list[tuple[int, Alloc | None]] = []
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
                if single:
                    break
                blocked.add(job.part)
                continue
            free -= job.units
            started.append((i, alloc))
            if self._run_limits:
                self._count_start(job, extra)
        return started


def strict_picks(order: list[SimJob], depth: int, free: int, single: bool) -> list[int]:
    """Indices into ``order`` of the jobs among its first ``depth`` that the main pass starts
    with ``free`` units (one pool, no QOS limits): strict priority order, a job that does not
    fit blocking its partition (``single``: the only one, so the pass ends there)."""
    picks: list[int] = []
    blocked: set[str] = set()
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
