"""What the simulator's parts share: the event kinds, the opt-in sub-second timing
(:class:`BackfillCycle`) and :class:`EngineState`, the attributes
:class:`sim.engine.Simulator` sets up that two or more of its parts read, with the methods one
part calls in another (declared for the type checker only). slurmctld's parts share its
globals (``slurmctld_conf``, ``job_list``); the simulator's share one object.

The parts (mixins of :class:`sim.engine.Simulator`): ``sim.job_mgr`` (job_mgr.c),
``sim.job_scheduler`` (job_scheduler.c), ``sim.backfill`` (backfill.c), ``sim.estimates``
(``squeue --start``, will-run) and ``sim.acct_policy`` (acct_policy.c).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hpcbase.jobs import JobSpec
    from sim.config import SlurmConfig
    from sim.dependency import Dependency
    from sim.limits import QosLimits
    from sim.mapparams import MapParams
    from sim.pools import Alloc, Pools
    from sim.priority import PriorityModel
    from sim.state import SimJob, SimState

# event kinds, in their tie order at equal times (sim/engine.py)
_SUBMIT, _TIMER, _KICK, _END = 0, 1, 2, 3
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
    reservation begins delays it (Slurm's map test is closed at the end).

    ``main_wakes`` replays the main scheduler's measured runs (slurmctld's background loop
    runs it at its one-second ticks, at most once per ``batch_sched_delay`` for
    submissions and every ``sched_interval`` for the full queue; a run's log has each, and
    ``main_full`` marks the full-queue ones): up to the last of them the main scheduler runs
    at each, to the default depth or the whole queue, and neither submissions nor
    ``sched_interval`` schedule it otherwise.

    ``main_ticks`` (a tick's time, each tick's drift past one second, the whole second of
    a full-queue run) models that loop where no run is measured (controller.c,
    ``_slurmctld_background``): it wakes every second plus its drift; a submission or a
    job's end only requests the main scheduler, which runs at the first tick at least
    ``batch_sched_delay`` whole seconds after its last run, and the full queue runs at the
    first tick ``sched_interval`` whole seconds after the last full run (it clears the
    requests); the loop starts as that full run's ``sched_interval`` earlier, both clocks
    set then. None: the main scheduler runs ``batch_sched_delay`` after a submission, at
    once after an end (``main_on_end``) and every ``sched_interval`` of simulated time.

    ``epilogs``: (job name, seconds) of jobs whose epilog is measured (a log at ``debug2``
    names the late ones): after such a job's end nothing starts for that long, in place of
    ``epilog``.

    A job that waits on another's end (afterok, afterany, afternotok) becomes eligible, its
    age counted from then, at the first backfill pass or main-scheduler run that begins
    after that job's epilog (or ``completing`` hold) ends: Slurm's dependency holds while the
    job is COMPLETING, and ``job_independent`` sets the begin time when a pass builds its
    queue.

    ``calc_phase``: slurmctld's decay thread (which folds fair-share usage and recomputes
    every priority) runs every ``PriorityCalcPeriod`` from its own start, so its ticks fall
    at ``calc_phase`` plus multiples of the period (0: at multiples of it from t = 0).
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
    main_wakes: tuple[float, ...] = ()
    main_full: tuple[bool, ...] = ()
    main_ticks: tuple[float, float, float] | None = None
    calc_phase: float = 0.0
    epilogs: tuple[tuple[str, float], ...] = ()


class EngineState:
    """The simulator's attributes that two or more of its parts read (set in
    ``Simulator.__init__``; an attribute one part alone reads is declared in that part), and
    the methods one part calls in another."""

    cfg: SlurmConfig
    cycle: BackfillCycle | None
    state: SimState
    prio: PriorityModel
    limits: QosLimits | None
    _pools: Pools | None
    _run_limits: bool  # QOS limits on running jobs
    _general: bool  # node pools or limits on running jobs: the slow, general passes
    _max_time: dict[str, float]  # partition -> MaxTime
    _time_held: bool  # some partition's MaxTime holds jobs back
    _rejects: bool  # a job can be rejected at submission
    _cpus_per_node: int
    _params: MapParams

    if TYPE_CHECKING:
        # sim/engine.py
        def _push(self, t: float, kind: int, payload: Any) -> None: ...
        def submit(self, spec: JobSpec) -> int: ...
        def snapshot(self) -> bytes: ...
        def restore(self, blob: bytes) -> None: ...

        # sim/job_mgr.py
        def _spec_job(
            self, jid: int, spec: JobSpec, submit: float, deps: list[Dependency]
        ) -> SimJob: ...
        def _reject_reason(self, job: SimJob) -> str | None: ...
        def _start(self, job: SimJob, backfill: bool, alloc: Alloc | None = None) -> None: ...
        def _start_picked(
            self, picks: Sequence[tuple[int, Alloc | None]], backfill: bool
        ) -> None: ...
        def _start_indices(self, idx: list[int], backfill: bool) -> None: ...
        def _known(self, jid: int) -> bool: ...
        def _independent_now(self) -> None: ...

        # sim/job_scheduler.py
        def _calc_tick(self, now: float) -> float: ...
        def _refresh_priorities(self) -> bool: ...
        def _can_any_start(self) -> bool: ...
        def _main_pass(self, depth: int) -> None: ...
        def _general_picks(
            self, order: list[SimJob], depth: int, free: int, extra: dict[int, list[int]]
        ) -> list[tuple[int, Alloc | None]]: ...
        def _prio_calc_time(self) -> float: ...

        # sim/backfill.py
        def _backfill_pass(self) -> None: ...
        def _map_params(self) -> MapParams: ...
        def _map_end(self, start: float, limit: float) -> float: ...
        def _walk_pools(
            self, stop: int, start_now: bool, n_test: int = ...
        ) -> list[tuple[int, Alloc]] | float | None: ...

        # sim/acct_policy.py
        def _use(self, user: int) -> list[int]: ...
        def _limit_reason(
            self, job: SimJob, extra: dict[int, list[int]] | None = None
        ) -> str | None: ...
        def _bf_passes_over(
            self, job: SimJob, extra: dict[int, list[int]] | None = None
        ) -> bool: ...
        def _count_start(self, job: SimJob, extra: dict[int, list[int]], sign: int = 1) -> None: ...
        def _limit_params(
            self,
        ) -> tuple[int, int, int, bool, bool, int, int, dict[int, tuple[int, int, int]]]: ...
        def _unheld(
            self, order: list[SimJob], stop: int
        ) -> tuple[list[int], list[SimJob]] | None: ...
