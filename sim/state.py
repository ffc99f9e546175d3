"""The simulator's state: its jobs (:class:`SimJob`) and everything the event loop changes
(:class:`SimState`), which :meth:`sim.engine.Simulator.snapshot` copies whole."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hpcbase.jobs import JobState
from sim import _backfill
from sim.dependency import Dependency, DependencyTracker
from sim.priority import FairShare


class SimJob:
    """A job inside the simulator (pending or running)."""

    __slots__ = (
        "id",
        "seq",
        "tidx",
        "units",
        "limit",
        "runtime",
        "user",
        "group",
        "name",
        "submit",
        "begin",
        "deps",
        "part",
        "tier",
        "static",
        "exit_code",
        "state",
        "eligible",
        "accrue",
        "start",
        "end",
        "prio",
        "key",
        "backfill",
        "has_singleton",
        "pool",
        "alloc",
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
    key: tuple[int, int, int] | None  # sort_key, when known; None: computed from the fields
    backfill: bool
    # set only with node pools or QOS limits (Simulator._general):
    pool: tuple[int, ...]  # its partition's node-pool segments (sim/pools.py); () = no pools
    alloc: list[tuple[int, int]] | None  # (segment, units) it holds while running, on pools

    def sort_key(self) -> tuple[int, int, int]:
        """The queue's order: tier, then priority (highest first), then arrival. The
        priority refresh (sim/_backfill.c) clears ``key`` of the jobs whose priority changed,
        and it is computed here for them (not stored: asking changes nothing)."""
        key = self.key
        return (-self.tier, -self.prio, self.seq) if key is None else key


_backfill.register(SimJob)  # the compiled core reads its slots by offset


@dataclass(slots=True, eq=False)
class SimState:
    """Everything the simulator changes as it runs, in one place: a snapshot pickles this
    object whole (the jobs it holds are shared between its containers and stay so). The
    finished-job log is outside it (append-only; a restore truncates it)."""

    free: int  # units free now
    next_id: int  # the id of the next injected job without one
    calc_next: float  # the next PriorityCalcPeriod tick
    fairshare: FairShare | None  # the priority model's decayed usage
    now: float = 0.0
    cursor: int = 0  # the next trace job to arrive
    heap: list[tuple[float, int, int, Any]] = field(default_factory=list)  # events; a job or None
    seq: int = 0  # tie-breaker of events and arrival order
    pending: dict[int, SimJob] = field(default_factory=dict)
    running: dict[int, SimJob] = field(default_factory=dict)
    ends: list[tuple[float, int, int]] = field(default_factory=list)  # (rounded end, seq, units)
    order: list[SimJob] = field(default_factory=list)  # eligible pending jobs by key
    min_units: list[tuple[int, int, int]] = field(
        default_factory=list
    )  # lazy heap (units, seq, id)
    minu: int = -1  # its valid minimum, cached; -1 when unknown
    deps: DependencyTracker = field(default_factory=DependencyTracker)
    prio_tick: float = -math.inf  # the calc tick the priorities were last computed at
    main_dirty: bool = False  # the main scheduler has something to look at
    bf_dirty: bool = False  # the backfill scheduler has something to look at
    full_main_due: bool = False  # a full main pass is due at the next sched_interval
    n_backfilled: int = 0
    bf_ran_at: float = -math.inf
    bf_wake: float = math.nan  # the backfill loop's next wake-up (BackfillCycle only)
    main_ran_at: float = -math.inf
    kick_at: float = -math.inf  # the delayed main-scheduler run (batch_sched_delay), if > now
    bf_pass_at: float = -math.inf  # when the last backfill pass began (BackfillCycle only)
    cg_until: float = -math.inf  # no job starts before: an epilog runs (BackfillCycle only)
    #: jobs whose dependency ended, with its epilog's end: independent at the first
    #: scheduler pass from then on (BackfillCycle only, :meth:`JobManager._independent_now`)
    released: list[tuple[float, SimJob]] = field(default_factory=list)
    seg_free: list[int] = field(default_factory=list)  # units free per node-pool segment
    seg_cap: list[int] = field(default_factory=list)  # units available per segment now
    #: per segment, units running jobs hold over its availability (paid back as they end)
    seg_debt: list[int] = field(default_factory=list)
    # per user, for QOS limits: [running jobs, nodes, CPUs, pending + running jobs]
    user_use: dict[int, list[int]] = field(default_factory=dict)
    rejected: dict[int, str] = field(default_factory=dict)  # job id -> why it was rejected
    cap: int = 0  # units available now (sim/availability.py; the cluster's size without)
    av_at: int = 0  # the next availability step
    lim_at: int = 0  # the next limit step (Simulator's limit_steps)
    main_at: int = 0  # the next measured main-scheduler run (BackfillCycle.main_wakes)
    # slurmctld's background loop (BackfillCycle.main_ticks): a main run is requested; the
    # whole seconds of the last main run and of the last full one; the last tick handled
    main_req: bool = False
    main_last: float = -math.inf
    full_last: float = -math.inf
    tick_at: float = -math.inf
