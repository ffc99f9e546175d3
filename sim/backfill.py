"""The backfill scheduler (slurmctld's backfill.c, ``_attempt_backfill``): the pass over the
first ``bf_max_job_test`` jobs, its map inputs, the plan under QOS limits and the walk on
node pools with its per-segment map. All are compiled (sim/_backfill.c and
sim/_poolwalk.c; their Python models are tests/sim/backfill_model.py and
tests/sim/pools_model.py)."""

from __future__ import annotations

import math
import sys

from sim import _backfill
from sim.engine_state import EngineState
from sim.mapparams import MapParams
from sim.pools import Alloc

# Slurm's will-run test frees running jobs in groups cut at 30-s windows (sim/_backfill.c).
WILL_RUN_WINDOW = 30.0


class Backfill(EngineState):
    """The backfill pass (a part of :class:`sim.engine.Simulator`)."""

    epoch: float
    _whole: bool  # BackfillCycle.whole_seconds

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
        t, res = start + limit, self.cfg.bf_resolution
        if res <= 1 or math.isinf(t):  # rounded up to bf_resolution (hot: every start and end)
            return t
        return math.ceil(t / res) * res

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
        if self._run_limits:
            idx = self._plan_limited()
        else:
            idx = _backfill.plan(order, self.cfg.bf_max_job_test, self._map_params())
        if idx:
            self._start_indices(idx, backfill=True)

    def _plan_limited(self) -> list[int]:
        """The compiled backfill plan under QOS limits, Slurm's walk in priority order: a
        job held by a limit at its turn (counting the jobs the pass started before it)
        neither starts nor reserves. Jobs that Slurm passes over before its will-run test
        (:meth:`_bf_passes_over`) do not count towards ``bf_max_job_test``, so the walk goes
        deeper past them (``_backfill.plan_limited``; its Python model is
        plan_limited_model in tests/sim/test_backfill_core.py)."""
        st = self.state
        return _backfill.plan_limited(
            st.order,
            self.cfg.bf_max_job_test,
            self._map_params(),
            st.user_use,
            self._limit_params(),
        )

    def _walk_pools(
        self, stop: int, start_now: bool, n_test: int = sys.maxsize
    ) -> list[tuple[int, Alloc]] | float | None:
        """The backfill walk on node pools over ``order[:stop]``: with ``start_now``, the
        jobs it starts now (index, allocation), up to its ``n_test``-th job that counts (a
        job a limit holds at its turn is passed; one :meth:`_bf_passes_over` holds does
        not count); else ``squeue --start`` of ``order[stop]`` (reservations of every job
        before it, then its earliest start, or None). Slurm's map
        kept per segment, freed in will-run groups; a job started now joins the running jobs
        and the map is rebuilt; a reservation holds whole nodes on a CPU-counted cluster.
        Compiled (``_backfill.walk_pools``, sim/_poolwalk.c; its Python model is
        tests/sim/pools_model.py)."""
        st, cfg = self.state, self.cfg
        pools = self._pools
        assert pools is not None
        res = cfg.bf_resolution
        params = (
            st.now,
            st.now + cfg.bf_window,
            max(res, 1.0),
            WILL_RUN_WINDOW,
            float(cfg.bf_window_linear),
            self.epoch,
            res,
            self._cpus_per_node,
        )
        limits = self._limit_params() if start_now and self._run_limits else None
        return _backfill.walk_pools(
            st.order,
            stop,
            start_now,
            st.seg_free,
            pools.seg_size,
            st.running,
            params,
            st.user_use,
            limits,
            n_test,
        )

    def _backfill_pools(self) -> None:
        """:meth:`_backfill_pass` on node pools (sim/pools.py)."""
        n_test = self.cfg.bf_max_job_test
        n = len(self.state.order)
        plan = self._walk_pools(n if self._run_limits else min(n, n_test), True, n_test)
        assert isinstance(plan, list)
        if plan:
            self._start_picked(plan, backfill=True)
