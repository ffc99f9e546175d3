"""The per-user QOS limits as the schedulers apply them (slurmctld's acct_policy.c): which
limit holds a job back now, and the running jobs' nodes, CPUs and job counts per user. The
limits themselves are ``sim.limits.QosLimits``."""

from __future__ import annotations

from sim import _backfill
from sim.engine_state import EngineState
from sim.limits import REASON_CPUS, REASON_JOBS, REASON_NODES, Caps
from sim.state import SimJob

#: the limits as sim/_backfill.c takes them: (max_jobs, max_nodes, max_cpus, larger jobs
#: exempt, CPU-counted, CPUs per node, node CPUs, users' own limits: user -> (max_jobs,
#: max_nodes, max_cpus) where higher than the QOS's); -1 for no limit
LimitParams = tuple[int, int, int, bool, bool, int, int, dict[int, tuple[int, int, int]]]


def _capped(caps: Caps) -> tuple[int, int, int]:
    """Limits as sim/_backfill.c takes them: -1 for no limit."""
    return (
        -1 if caps[0] is None else caps[0],
        -1 if caps[1] is None else caps[1],
        -1 if caps[2] is None else caps[2],
    )


class AcctPolicy(EngineState):
    """The QOS limit checks and per-user counts (a part of :class:`sim.engine.Simulator`)."""

    unit: str
    _node_cpus: int  # CPUs per node on a node-counted cluster, when the config says
    _limit_params_made: LimitParams | None = None

    def _use(self, user: int) -> list[int]:
        """The user's [running jobs, nodes, CPUs, pending + running jobs] (QOS limits)."""
        use = self.state.user_use.get(user)
        if use is None:
            use = self.state.user_use[user] = [0, 0, 0, 0]
        return use

    def _tres(self, job: SimJob) -> tuple[int, int]:
        """The job's nodes and CPUs as QOS limits count them: on a CPU-counted cluster its
        CPUs packed onto whole nodes; on a node-counted one its nodes times CPUs per node
        (from :meth:`_limit_params`' units per node and CPUs per unit)."""
        params = self._limit_params_made or self._limit_params()
        return -(-job.units // params[5]), job.units * params[6]

    def _limit_reason(self, job: SimJob, extra: dict[int, list[int]] | None = None) -> str | None:
        """The QOS limit that keeps ``job`` from starting now (``extra``: what jobs started
        earlier in the same pass add per user), or None."""
        lim = self.limits
        if lim is None:
            return None
        max_jobs, max_nodes, max_cpus = lim.caps(job.user)
        use = self.state.user_use.get(job.user)
        more = extra.get(job.user) if extra else None
        jobs = (use[0] if use else 0) + (more[0] if more else 0)
        if max_jobs is not None and jobs + 1 > max_jobs:
            return REASON_JOBS
        nodes, cpus = self._tres(job)
        qos_nodes = lim.max_nodes_per_user
        if max_nodes is not None and not (
            lim.larger_jobs_exempt and qos_nodes is not None and nodes > qos_nodes
        ):
            held = (use[1] if use else 0) + (more[1] if more else 0)
            if held + nodes > max_nodes:
                return REASON_NODES
        if max_cpus is not None:
            held = (use[2] if use else 0) + (more[2] if more else 0)
            if held + cpus > max_cpus:
                return REASON_CPUS
        return None

    def _bf_passes_over(self, job: SimJob, extra: dict[int, list[int]] | None = None) -> bool:
        """Whether Slurm's backfill (22.05's ``_attempt_backfill``) passes ``job`` over before
        it counts towards ``bf_max_job_test``: the running-jobs limit holds it
        (``acct_policy_job_runnable_pre_select``), or it is over the per-user node cap on its
        own (``get_node_cnts``). Node and CPU counts with the user's running jobs are checked
        after the will-run test, so a job they hold counts."""
        reason = self._limit_reason(job, extra)
        if reason == REASON_JOBS:
            return True
        lim = self.limits
        if reason != REASON_NODES or lim is None:
            return False
        cap = lim.caps(job.user)[1]
        return cap is not None and self._tres(job)[0] > cap

    def _unheld(self, order: list[SimJob], stop: int) -> tuple[list[int], list[SimJob]] | None:
        """The indices, and the jobs, among the first ``stop`` of ``order`` that no limit
        holds back now, or None when none is held: :meth:`_limit_reason` over them, compiled
        (sim/_backfill.c)."""
        if self.limits is None:
            return None
        return _backfill.limit_filter(order, stop, self.state.user_use, self._limit_params())

    def _limit_params(self) -> LimitParams:
        """The limits as ``_backfill.limit_filter`` takes them (-1: no limit), made once (the
        limits and the cluster's units are fixed when the simulator is made)."""
        if self._limit_params_made is not None:
            return self._limit_params_made
        lim = self.limits
        assert lim is not None

        def cap(v: int | None) -> int:
            return -1 if v is None else v

        cpu_counted = self.unit in ("cpus", "procs")
        params = (
            cap(lim.max_jobs_per_user),
            cap(lim.max_nodes_per_user),
            cap(lim.max_cpus_per_user),
            lim.larger_jobs_exempt,
            cpu_counted,
            self._cpus_per_node if cpu_counted else 1,
            1 if cpu_counted else self._node_cpus,
            {u: _capped(lim.caps(u)) for u, *_ in lim.user_limits},
        )
        self._limit_params_made = params
        return params

    def _count_start(self, job: SimJob, extra: dict[int, list[int]], sign: int = 1) -> None:
        """Add (sign=1) or remove (-1) a running job to per-user counts ``extra``."""
        # _tres, inlined (hot: every start and end)
        params = self._limit_params_made or self._limit_params()
        units = job.units
        nodes, cpus = -(-units // params[5]), units * params[6]
        use = extra.get(job.user)
        if use is None:
            use = extra[job.user] = [0, 0, 0, 0]
        use[0] += sign
        use[1] += sign * nodes
        use[2] += sign * cpus
