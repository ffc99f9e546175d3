"""slurmctld's threads on the clock (``BackfillCycle``): the backfill loop's free-running
wake-ups, and the background loop (controller.c, ``_slurmctld_background``) that runs the
main scheduler, as a real run's log measured them or as ``main_ticks`` models them. A part
of :class:`sim.engine.Simulator`; the event loop (sim/engine.py) asks these when to wake."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

from sim.engine_state import EngineState


class ControllerLoops(EngineState):
    """The backfill loop's wake-ups and the main scheduler's clock (a part of
    :class:`sim.engine.Simulator`)."""

    _wakes: list[float]  # measured backfill wake-ups, idle ones filled in (BackfillCycle.wakes)

    def _measured_main_pass(self, full: bool) -> None:
        """A main-scheduler run of slurmctld's background loop, now: measured (a real
        run's log, ``BackfillCycle.main_wakes``) or modelled (``main_ticks``)."""
        st = self.state
        self._independent_now()
        if self._can_any_start():
            self._main_pass(len(st.order) if full else self.cfg.default_queue_depth)
        st.main_ran_at = st.now
        st.main_req = False
        st.main_last = math.floor(st.now)
        if full:
            st.full_last = st.main_last

    def _tick_at_or_after(self, t: float) -> float:
        """The background loop's first tick at or after ``t`` (``main_ticks``), after the
        last one handled."""
        assert self.cycle is not None and self.cycle.main_ticks is not None
        first, drift, _ = self.cycle.main_ticks
        step = 1.0 + drift
        k = math.ceil((t - first) / step)
        tick = first + k * step
        while tick <= self.state.tick_at or tick < t:
            k += 1
            tick = first + k * step
        return tick

    def _next_main_tick(self, more: bool) -> float:
        """The next tick at which the background loop runs the main scheduler (inf: none
        is due): requested and ``batch_sched_delay`` whole seconds after the last run, or a
        full run while a pending job could start and ``more`` events are to come (else no
        full run could change anything, and a job that can never start ends the run). Full
        runs that passed unneeded only set the loop's clocks."""
        st, sched_int = self.state, self.cfg.sched_interval
        tick = math.inf
        if sched_int > 0:
            tf = self._loop_clocks()
            if st.pending and more and self._can_any_start():
                tick = tf
        if st.main_req:
            tick = min(
                tick,
                self._tick_at_or_after(max(st.now, st.main_last + self.cfg.batch_sched_delay)),
            )
        return tick

    def _loop_clocks(self) -> float:
        """Bring the background loop's clocks to now: the full runs it made that nothing
        woke the simulator for (no pending job could start) cleared its requests and set
        its clocks. Returns its next full run's tick."""
        st, sched_int = self.state, self.cfg.sched_interval
        tf = self._tick_at_or_after(st.full_last + sched_int)
        while tf < st.now:
            st.full_last = st.main_last = math.floor(tf)
            st.main_req = False
            tf = self._tick_at_or_after(st.full_last + sched_int)
        return tf

    def _request_main(self) -> None:
        """A submission or a job's end asks for the main scheduler (``queue_job_scheduler``):
        the background loop runs it at a tick (``main_ticks``)."""
        if self.cfg.sched_interval > 0:
            self._loop_clocks()
        self.state.main_req = True

    def _tick_main_kind(self, t: float) -> int:
        """The background loop's tick at ``t``: which main run it makes (0 none, 1 default
        depth, 2 full queue); the run itself follows the tick's events."""
        st, cfg = self.state, self.cfg
        st.tick_at = t
        second = math.floor(t)
        if cfg.sched_interval > 0 and second - st.full_last >= cfg.sched_interval:
            return 2
        return 1 if st.main_req and second - st.main_last >= cfg.batch_sched_delay else 0

    def _full_main_now(self) -> bool:
        """The periodic full main pass is due now (``sched_interval``), unless measured
        main-scheduler runs stand in for it."""
        st, step = self.state, self.cfg.sched_interval
        due = st.full_main_due and step > 0 and st.now % step == 0
        c = self.cycle
        return due and not self._mains_measured() and (c is None or c.main_ticks is None)

    def _mains_measured(self) -> bool:
        """Measured main-scheduler runs are still to come: they alone run it."""
        c = self.cycle
        return c is not None and self.state.main_at < len(c.main_wakes)

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
            self._independent_now()
            if self._can_any_start():
                self._backfill_pass()
            # an epilog that holds every start leaves the pass to do again
            st.bf_dirty = st.now < st.cg_until
            nxt += self.cycle.cost
        wakes = self._wakes
        if wakes and st.now < wakes[-1]:  # measured wake-ups: the next one
            nxt = wakes[bisect_right(wakes, st.now)]
        st.bf_wake = nxt
