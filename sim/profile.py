"""A site's scheduling world inferred from its accounting log: ``hpcsim fit``.

What the log shows, fitted on its first two thirds (``FIT_FRACTION``), judged elsewhere
(``bench/sim_twin.py``) on the last third:

- the cluster's size: at least the recorded schedule's peak use (a headerless log starts
  from it, never from its largest job);
- an availability timeline (sim/availability.py): the most units the recorded schedule used
  within a window around each moment, the window fitted;
- node pools, where the log names partitions (queues): the partitions sharing every node,
  each a pool of its recorded peak use, or some nested in others, tried against one pool
  and no partitions (:func:`pool_candidates`);
- per-user limits on running jobs and nodes where the recorded concurrency shows a wall (at
  least ``WALL_USERS`` users reach the same maximum and almost none pass it), or a node cap
  at one of the largest per-user maxima (a soft limit a few users passed);
- the priority: FIFO or a flat fair share with its decay half-life, Slurm's
  ``batch_sched_delay``, and how deep backfill looks into the queue (``bf_max_job_test``).
  Where the log records each job's priority (a sacct ``Priority`` column), the priority
  is fitted to it instead (:func:`priority_fit`): the setting whose priorities at
  submission rank the fit part's jobs most like the recorded ones, fair shares with a
  job-size weight included (``PRIORITY_SETTINGS``).

The choices are made on the fit part's error (:func:`loss`): every pair of limits and
availability window, then coordinate descent over all settings (the priority held at the
recorded column's choice where there is one); ``hpcsim fit`` judges them on the whole fit
part or on its recent half, whichever forecast better inside the past
(:func:`choose_recent`). The
result is a :class:`SiteProfile`, a ``slurm.conf`` subset plus ``sacctmgr`` limits with the
trace's SHA-256, stored as ``NAME.profile.json`` where calibrations are
(sim/calibration.py); ``hpcsim replay`` uses it by default.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np

from sim.availability import (
    Availability,
    fitted,
    outage_windows,
    recorded_usage,
    with_outages,
)
from sim.calibration import find_stored, store_beside
from sim.config import SlurmConfig
from sim.fidelity import Fidelity, fidelity, spearman
from sim.limit_breaks import WALL_USERS, limit_steps, per_user_max
from sim.limits import QosLimits
from sim.phases import gc_paused
from sim.priority import submit_priorities
from sim.traces.model import Trace

SCHEMA = 1
SUFFIX = ".profile.json"
CACHE_DIR = "profiles"
FIT_FRACTION = 2 / 3
WARMUP = 0.1  # of the span, after the first recorded start: the replay starts empty
#: candidate settings the fit chooses among (availability windows in seconds; None: none)
WINDOWS: tuple[float | None, ...] = (None, 3600.0, 6 * 3600.0, 86400.0, 3 * 86400.0)
PRIORITIES: dict[str, str] = {
    "fifo": "",
    "fairshare-1d": "1-0",
    "fairshare-3.5d": "3-12:00:00",
    "fairshare-7d": "7-0",
}
#: PriorityWeightJobSize beside PriorityWeightFairshare=100000 (Slurm's default favours large
#: jobs). Against a recorded Priority column the age weight cannot be fitted: a job's age
#: factor is 0 as it is submitted, when sacct records its priority.
JOB_SIZE_WEIGHTS = (1000, 10000)
#: every priority a profile may hold: (PriorityDecayHalfLife, PriorityWeightJobSize); "": FIFO
PRIORITY_SETTINGS: dict[str, tuple[str, int]] = {
    **{k: (v, 0) for k, v in PRIORITIES.items()},
    **{
        f"{k}-size{w // 1000}k": (v, w)
        for k, v in PRIORITIES.items()
        if v
        for w in JOB_SIZE_WEIGHTS
    },
}
#: fewer fit-part jobs with a recorded priority: the priority is chosen by the replays' loss
MIN_RECORDED_PRIORITIES = 20
DELAYS = (0.0, 1.0, 3.0)
#: backfill's depth (``SchedulerParameters=bf_max_job_test``; None: Slurm's default, 500): a
#: site's backfill that reaches fewer jobs lets fewer short jobs past the queue
BACKFILL_DEPTHS: tuple[int | None, ...] = (None, 100, 50, 30, 20, 10)
MAX_CAPS = 6
FIT_JITTERS = 2
JITTER = 0.02  # relative standard deviation of the run times (replay_waits)
#: ``fit(recent=AUTO)``: whether the fit judges only the last RECENT_SHARE of its period is
#: chosen inside the past (:func:`choose_recent`), over INNER_JITTERS replays each way
AUTO = "auto"
RECENT_SHARE = 0.5
INNER_JITTERS = 3
#: fewer jobs to fit on or to judge by inside the past: the whole period, unchecked
MIN_CHECK_JOBS = 20
#: while recorded jobs waited: (window s, headroom as a share of the size); None: no clamp
CLAMPS: tuple[tuple[float, float] | None, ...] = (
    None,
    (0.0, 0.0),
    (0.0, 0.025),
    (3600.0, 0.0),
    (3600.0, 0.025),
)
#: outages: None, or the shortest stretch without a recorded start, while a job that would
#: have fit waited, taken as a window in which nothing could start (availability.outage_windows)
OUTAGES: tuple[float | None, ...] = (None, 2 * 3600.0, 6 * 3600.0)


#: partition names a profile's slurm.conf can hold; a log naming others is fitted on one pool
_PART_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: the pool of a log's jobs that name no partition
UNNAMED = "unnamed"
#: more partitions than this are tried on shared nodes only (a pool each would make the
#: scheduler passes slow and the nesting search quadratic)
MAX_POOLS = 16


class ProfileError(ValueError):
    """A trace that cannot be fitted (no recorded starts, too few jobs)."""


@dataclass(slots=True)
class SiteProfile:
    """A fitted site: what ``hpcsim replay`` simulates for one trace file."""

    trace: str
    sha256: str
    unit: str
    units: int
    recorded_peak: int
    priority: str  # a PRIORITY_SETTINGS key
    batch_sched_delay: float
    window_s: float | None  # availability window; None: the whole cluster all the time
    clamp: tuple[float, float] | None  # a CLAMPS entry
    limits: str  # sacctmgr Key=Value pairs ("" for none)
    larger_jobs_exempt: bool
    fit_until_s: float  # jobs submitted before were fitted on (seconds from t = 0)
    fit_from_s: float
    fit: dict[str, float] = field(default_factory=dict)  # the fit part's figures
    steps: list[dict[str, object]] = field(default_factory=list)
    created: str = ""
    #: Spearman of each priority setting against the log's recorded Priority column over
    #: the fit part (:func:`priority_fit`); empty when the log has none
    priority_spearman: dict[str, float] = field(default_factory=dict)
    #: node pools: each of the log's partitions (UNNAMED: jobs naming none) and its units;
    #: those not ``nested`` are disjoint and sum to ``units``; empty: one pool for all jobs
    pools: dict[str, int] = field(default_factory=dict)
    #: the log's partitions on one shared pool (every node in each: Slurm's main scheduler
    #: still blocks only the partition of a job that does not fit); empty with pools
    shared_partitions: list[str] = field(default_factory=list)
    #: pools nested in another: the partition's nodes are the first of its parent's (a
    #: debug partition on some of the batch nodes); it adds no units of its own
    nested: dict[str, str] = field(default_factory=dict)
    #: an OUTAGES entry: stretches of at least this many seconds without a recorded start
    #: while a job that would have fit waited are windows in which nothing may start
    outage_s: float | None = None
    #: the share of the fit period, at its end, whose jobs judged the settings (None: all)
    recent: float | None = None
    #: how that was chosen inside the past (:func:`choose_recent`): each way's losses on
    #: the last third of the fit period, fitted on the first two; empty when not checked
    recency: dict[str, list[float]] = field(default_factory=dict)
    #: a BACKFILL_DEPTHS entry: ``bf_max_job_test`` (None: Slurm's default)
    bf_max_job_test: int | None = None
    path: str = ""

    def slurm_conf(self, total_units: int | None = None) -> str:
        """The ``slurm.conf`` subset of this profile (its pools scaled to ``total_units``
        where that differs from its size)."""
        params = f"batch_sched_delay={self.batch_sched_delay:g}"
        if self.bf_max_job_test is not None:
            params += f",bf_max_job_test={self.bf_max_job_test}"
        lines = [f"SchedulerParameters={params}"]
        return (
            "\n".join(lines + priority_lines(self.priority) + self._pool_lines(total_units)) + "\n"
        )

    def _pool_lines(self, total_units: int | None) -> list[str]:
        """``NodeName``/``PartitionName`` lines of the pools: one node per unit (one CPU
        each on a CPU-counted cluster), the largest pool the default partition."""
        cpus = " CPUs=1" if self.unit in ("cpus", "procs") else ""
        if self.shared_partitions:
            default = UNNAMED if UNNAMED in self.shared_partitions else self.shared_partitions[0]
            return [f"NodeName=n[1-{total_units or self.units}]" + cpus] + [
                f"PartitionName={name} Nodes=ALL" + (" Default=YES" if name == default else "")
                for name in self.shared_partitions
            ]
        if not self.pools:
            return []
        sizes = scale_pools(self.pools, total_units or self.units, self.nested)
        default = max(self.pools, key=self.pools.__getitem__)
        if UNNAMED in self.pools:
            default = UNNAMED
        out: list[str] = []
        prefix = {name: f"p{i}n" for i, name in enumerate(self.pools)}
        for name in self.pools:
            if name not in self.nested:
                out.append(f"NodeName={prefix[name]}[1-{sizes[name]}]{cpus}")
        for name in self.pools:
            nodes = f"{prefix[self.nested.get(name, name)]}[1-{sizes[name]}]"
            mark = " Default=YES" if name == default else ""
            out.append(f"PartitionName={name} Nodes={nodes}{mark}")
        return out

    def config(self, total_units: int | None = None) -> SlurmConfig:
        return SlurmConfig.from_text(
            self.slurm_conf(total_units), f"profile {self.path or self.trace}"
        )

    def qos(self) -> QosLimits | None:
        if not self.limits:
            return None
        lim = QosLimits.from_text(self.limits, f"profile {self.path or self.trace}")
        return QosLimits(
            max_jobs_per_user=lim.max_jobs_per_user,
            max_nodes_per_user=lim.max_nodes_per_user,
            larger_jobs_exempt=self.larger_jobs_exempt,
        )

    def availability(
        self, trace: Trace, total_units: int | None = None
    ) -> Availability | dict[str, Availability] | None:
        """The availability timeline fitted to ``trace``'s recorded schedule (with pools,
        one per pool, fitted to its partition's jobs); for a cluster of ``total_units``
        other than the profile's, scaled to it (the same share of the cluster available at
        each moment)."""
        if self.window_s is None and self.outage_s is None:
            return None
        if not self.pools:
            return self._fitted(trace, self.units, total_units or self.units)
        names = partition_names(trace)
        sizes = scale_pools(self.pools, total_units or self.units, self.nested)
        parents = set(self.nested.values())
        return {  # a timeline for each pool that no other partition shares
            name: self._fitted(trace.select(names == name), units, sizes[name])
            for name, units in self.pools.items()
            if name not in self.nested and name not in parents
        }

    def _fitted(self, trace: Trace, units: int, scaled_to: int) -> Availability:
        """The timeline of a pool of ``units`` whose jobs are ``trace``'s, scaled to
        ``scaled_to`` units."""
        use = recorded_usage(trace)
        avail: Availability | None
        if self.window_s is None:
            avail = None
        elif self.clamp is None:
            avail = fitted(use, units, window=self.window_s)
        else:
            window, share = self.clamp
            avail = fitted(
                use,
                units,
                window=self.window_s,
                headroom=round(share * units),
                waiting_trace=trace,
                waiting_window=window,
            )
        if self.outage_s is not None:
            windows = outage_windows(trace, units, self.outage_s, avail)
            avail = with_outages(avail, windows, units)
        assert avail is not None
        return avail if scaled_to == units else avail.scaled(scaled_to / units, scaled_to)

    def simulator(
        self,
        trace: Trace,
        *,
        run: Trace | None = None,
        total_units: int | None = None,
        seed: int = 0,
    ) -> Any:
        """A :class:`~sim.engine.Simulator` of ``run`` (default ``trace``, whose recorded
        schedule gives the availability timeline and where the limits change,
        :func:`~sim.limit_breaks.limit_steps`) in this profile's world; ``total_units``
        other than the profile's size scales the timeline with it (:meth:`availability`)."""
        from sim.engine import Simulator

        return Simulator(
            trace if run is None else run,
            self.config(total_units),
            total_units=total_units or self.units,
            seed=seed,
            limits=(limits := self.qos()),
            availability=self.availability(trace, total_units),
            limit_steps=limit_steps(trace, limits),
        )

    def describe(self) -> str:
        win = "none" if self.window_s is None else f"{self.window_s / 3600:g} h window"
        if self.window_s is not None and self.clamp is not None:
            win += (
                f", while jobs waited {self.clamp[0] / 3600:g} h window + {100 * self.clamp[1]:g} %"
            )
        if self.outage_s is not None:
            win += f", outages after {self.outage_s / 3600:g} h without a start"
        prio = self.priority
        if self.priority in self.priority_spearman:
            prio += f" (recorded Priority, Spearman {self.priority_spearman[prio]:.3f})"
        pools = ""
        if self.pools:
            pools = (
                " (pools "
                + ", ".join(
                    f"{k} {v}" + (f" in {self.nested[k]}" if k in self.nested else "")
                    for k, v in self.pools.items()
                )
                + ")"
            )
        elif self.shared_partitions:
            pools = f" (partitions {', '.join(self.shared_partitions)} sharing every node)"
        depth = "" if self.bf_max_job_test is None else f", bf_max_job_test={self.bf_max_job_test}"
        return (
            f"{self.units} {self.unit}{pools}, priority {prio}, batch_sched_delay="
            f"{self.batch_sched_delay:g}{depth}, limits {self.limits or 'none'}, "
            f"availability {win}"
        )

    def to_json(self) -> str:
        d = asdict(self)
        d.pop("path")
        d["schema"] = SCHEMA
        d["slurm_conf"] = self.slurm_conf()
        return json.dumps(d, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, path: str = "") -> SiteProfile:
        d = json.loads(text)
        if d.pop("schema", None) != SCHEMA:
            raise ValueError("unknown site profile schema")
        d.pop("slurm_conf", None)
        d["clamp"] = tuple(d["clamp"]) if d.get("clamp") is not None else None
        if d["priority"] not in PRIORITY_SETTINGS:
            raise ValueError(f"unknown priority {d['priority']!r}")
        pools = d.get("pools", {})
        if not isinstance(pools, dict) or any(
            not _PART_NAME.fullmatch(str(k)) or not isinstance(v, int) or v < 1
            for k, v in pools.items()
        ):
            raise ValueError("pools: partition names to positive unit counts expected")
        shared = d.get("shared_partitions", [])
        if not isinstance(shared, list) or not all(_PART_NAME.fullmatch(str(k)) for k in shared):
            raise ValueError("shared_partitions: a list of partition names expected")
        if pools and shared:
            raise ValueError("a profile has pools or shared partitions, not both")
        nested = d.get("nested", {})
        if not isinstance(nested, dict) or any(
            k not in pools or v not in pools or v in nested or pools[k] > pools[v]
            for k, v in nested.items()
        ):
            raise ValueError("nested: pools inside a larger pool that is not nested expected")
        own = sum(v for k, v in pools.items() if k not in nested)
        if pools and own != d["units"]:
            raise ValueError(f"pools sum to {own}, not the profile's {d['units']}")
        outage = d.get("outage_s")
        if outage is not None and (not isinstance(outage, int | float) or not outage > 0):
            raise ValueError(
                f"outage_s: a positive number of seconds or null expected, not {outage!r}"
            )
        depth = d.get("bf_max_job_test")
        if depth is not None and (type(depth) is not int or depth < 1):
            raise ValueError(f"bf_max_job_test: a positive whole number or null, not {depth!r}")
        recent = d.get("recent")
        if recent is not None and (not isinstance(recent, int | float) or not 0 < recent <= 1):
            raise ValueError(f"recent: a share in (0, 1] or null expected, not {recent!r}")
        return cls(**d, path=path)


def scale_pools(
    pools: dict[str, int], total: int, nested: dict[str, str] | None = None
) -> dict[str, int]:
    """``pools`` scaled to ``total`` units in all (largest remainders; each at least 1);
    a ``nested`` pool (in its parent, adding no units) by the same factor, at most its
    parent."""
    nested = nested or {}
    own = {k: v for k, v in pools.items() if k not in nested}
    have = sum(own.values())
    if total == have:
        return dict(pools)
    out = _scaled(own, total)
    for k, parent in nested.items():
        out[k] = min(out[parent], max(1, round(pools[k] * total / have)))
    return {k: out[k] for k in pools}


def _scaled(pools: dict[str, int], total: int) -> dict[str, int]:
    have = sum(pools.values())
    if total < len(pools):
        raise ValueError(f"{total} units cannot hold {len(pools)} pools")
    exact = {k: v * total / have for k, v in pools.items()}
    out = {k: max(1, int(x)) for k, x in exact.items()}
    by_rest = sorted(pools, key=lambda k: out[k] - exact[k])
    i = 0
    while sum(out.values()) != total:
        k = by_rest[i % len(by_rest)]
        step = 1 if sum(out.values()) < total else -1
        if out[k] + step >= 1:
            out[k] += step
        i += 1
    return out


def priority_lines(key: str) -> list[str]:
    """The ``slurm.conf`` lines of a ``PRIORITY_SETTINGS`` entry (none for FIFO)."""
    half_life, size_weight = PRIORITY_SETTINGS[key]
    if not half_life:
        return []
    return [
        "AccountingStorageType=accounting_storage/slurmdbd",
        "PriorityType=priority/multifactor",
        "PriorityWeightFairshare=100000",
        "PriorityWeightAge=1000",
        *([f"PriorityWeightJobSize={size_weight}"] if size_weight else []),
        "PriorityMaxAge=7-0",
        f"PriorityDecayHalfLife={half_life}",
    ]


# ------------------------------------------------------------------ what the log shows


def cluster_size(trace: Trace) -> tuple[int, int]:
    """(size to simulate, recorded peak): the trace's own size, raised to the recorded
    schedule's peak use (a headerless log: the peak, never its largest job)."""
    peak = recorded_usage(trace).peak
    own = trace.total_units or 0
    return max(own, peak, int(trace.units.max()) if len(trace) else 1), peak


def partition_names(trace: Trace) -> np.ndarray:
    """Each job's partition as a profile names it (UNNAMED where the log names none)."""
    return np.array([p or UNNAMED for p in trace.partitions])


def log_partitions(trace: Trace) -> list[str]:
    """The partitions the log names (UNNAMED for its jobs that name none), sorted; empty
    when it names fewer than two, or a name a ``slurm.conf`` could not hold."""
    parts = set(trace.partitions)
    if UNNAMED in parts and "" in parts:  # a partition of that name, and jobs naming none
        return []
    uniq = sorted(p or UNNAMED for p in parts)
    if len(uniq) < 2 or not all(_PART_NAME.fullmatch(u) for u in uniq):
        return []
    return uniq


def nested_pools(trace: Trace, pools: dict[str, int]) -> dict[str, str]:
    """Partitions whose nodes may be some of a larger partition's: together the two never
    used more than the larger one's peak (a debug partition on some batch nodes). Each maps
    to the largest such partition, itself not nested; smallest first."""
    names = partition_names(trace)
    out: dict[str, str] = {}
    for small in sorted(pools, key=pools.__getitem__):
        for big in sorted(pools, key=pools.__getitem__, reverse=True):
            if big == small or big in out or pools[big] < pools[small]:
                continue
            both = recorded_usage(trace.select((names == small) | (names == big))).peak
            if both <= pools[big]:
                out[small] = big
                break
    parents = set(out.values())
    return {k: v for k, v in out.items() if k not in parents}


def pool_candidates(trace: Trace) -> list[object]:
    """The partition worlds the fit tries, as (pools, nested, shared partitions): one pool
    without partitions; where the log names several, also the partitions sharing every
    node, each a pool of its own, and (where the recorded use allows) some nested in
    others (:func:`nested_pools`); pools only up to ``MAX_POOLS`` partitions."""
    out: list[object] = [({}, {}, [])]
    parts = log_partitions(trace)
    if parts:
        out.append(({}, {}, parts))
    if parts and len(parts) <= MAX_POOLS:
        own = partition_pools(trace)
        out.append((own, {}, []))
        inside = nested_pools(trace, own)
        if inside:
            out.append((own, inside, []))
    return out


def partition_pools(trace: Trace) -> dict[str, int]:
    """Each of the log's partitions (:func:`log_partitions`) and its recorded peak use: the
    pools of a cluster whose partitions share no node; empty when there are none."""
    names = partition_names(trace)
    return {p: max(1, recorded_usage(trace.select(names == p)).peak) for p in log_partitions(trace)}


def user_maxima(trace: Trace, mask: np.ndarray) -> tuple[dict[int, int], dict[int, int]]:
    """Per user, the most jobs and the most units the recorded schedule ran at once."""
    m = mask & np.isfinite(trace.recorded_start)
    start = trace.recorded_start[m]
    end = start + np.maximum(trace.runtime[m], 0)
    units = trace.units[m].astype(np.int64)
    users = trace.user[m]
    jobs = per_user_max(start, end, np.ones(units.size, np.int64), users)
    return jobs, per_user_max(start, end, units, users)


def wall(maxima: dict[int, int]) -> int | None:
    """A limit the maxima show: the largest value at least ``WALL_USERS`` users reach,
    passed by at most 1 % of the users (at least one); None when there is none."""
    values = np.array(sorted(maxima.values()))
    if not values.size:
        return None
    uniq, counts = np.unique(values, return_counts=True)
    for v, c in zip(uniq[::-1], counts[::-1], strict=True):
        if c >= WALL_USERS and v > 1:
            above = int((values > v).sum())
            return int(v) if above <= max(1, 0.01 * values.size) else None
    return None


def infer_limits(trace: Trace, mask: np.ndarray) -> QosLimits | None:
    """Per-user limits on running jobs and nodes shown by the recorded concurrency of the
    jobs in ``mask`` (larger jobs are exempt from the node cap: they ran)."""
    jobs, nodes = user_maxima(trace, mask)
    lj, ln = wall(jobs), wall(nodes)
    if lj is None and ln is None:
        return None
    return QosLimits(max_jobs_per_user=lj, max_nodes_per_user=ln, larger_jobs_exempt=True)


def limit_candidates(trace: Trace, mask: np.ndarray, size: int) -> list[QosLimits]:
    """The per-user limits the fit tries: the walls (:func:`infer_limits`), and node caps at
    the largest per-user maxima of at least a quarter of the cluster (a soft limit, passed
    by a few users, shows no wall; at most ``MAX_CAPS``), with the jobs wall if any."""
    walls = infer_limits(trace, mask)
    _, nodes = user_maxima(trace, mask)
    caps = sorted({v for v in nodes.values() if 4 * v >= size and v < size}, reverse=True)
    lj = walls.max_jobs_per_user if walls is not None else None
    out = [walls] if walls is not None else []
    for cap in caps[:MAX_CAPS]:
        lim = QosLimits(max_jobs_per_user=lj, max_nodes_per_user=cap, larger_jobs_exempt=True)
        if lim not in out:
            out.append(lim)
    return out


def priority_fit(trace: Trace, mask: np.ndarray, units: int) -> dict[str, float]:
    """Spearman's rank correlation, over the jobs in ``mask`` that carry a recorded priority,
    of that priority with the one each ``PRIORITY_SETTINGS`` entry gives them as they are
    submitted (sim/priority.py's :func:`~sim.priority.submit_priorities`, fair-share usage
    from the recorded schedule) on a cluster of ``units``. Empty when fewer than
    ``MIN_RECORDED_PRIORITIES`` jobs carry one or the ranking is undefined (a constant
    column); settings with an undefined ranking are left out."""
    m = mask & np.isfinite(trace.recorded_priority)
    if m.sum() < MIN_RECORDED_PRIORITIES:
        return {}
    rec = trace.recorded_priority[m]
    out: dict[str, float] = {}
    for key in PRIORITY_SETTINGS:
        cfg = SlurmConfig.from_text("\n".join(priority_lines(key)) + "\n", f"priority {key}")
        rho = spearman(submit_priorities(trace, cfg, units)[m], rec)
        if math.isfinite(rho):
            out[key] = rho
    return out


# ------------------------------------------------------------------ the fit


def split(
    trace: Trace, fraction: float = FIT_FRACTION, recent: float | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """(fit jobs, held-out jobs, the cut): jobs with a recorded start submitted after the
    warm-up and before ``fraction`` of the span, and those after it. With ``recent``, the
    fit jobs are only those of the last ``recent`` share of that period (a site drifts: the
    settings are judged on the days nearest to the ones they will replay)."""
    known = np.isfinite(trace.recorded_start)
    if known.sum() < 20:
        raise ProfileError(f"{trace.source}: too few recorded starts to fit ({known.sum()})")
    t0, t1 = float(trace.submit[0]), float(trace.submit[-1])
    cut = t0 + fraction * (t1 - t0)
    since = float(np.nanmin(trace.recorded_start)) + WARMUP * (t1 - t0)
    if recent is not None:
        if not 0 < recent <= 1:
            raise ProfileError(
                f"recent: the share of the fit period must be in (0, 1], got {recent}"
            )
        since = cut - recent * (cut - since)
    fit = known & (trace.submit >= since) & (trace.submit < cut)
    if not fit.any():
        raise ProfileError(f"{trace.source}: no job with a recorded start in the fit period")
    held = known & (trace.submit >= cut)
    return fit, held, cut


def replay_waits(
    trace: Trace,
    profile: SiteProfile,
    *,
    jitter: float = 0.0,
    seed: int = 0,
) -> np.ndarray:
    """Each trace job's simulated wait (s) under ``profile`` (NaN: never started); with
    ``jitter``, run times scaled by 1 + jitter x N(0, 1) (seeded)."""
    from dataclasses import replace

    run = trace
    if jitter:
        rng = np.random.default_rng(seed)
        scale = np.clip(1 + jitter * rng.standard_normal(len(trace)), 0.5, 1.5)
        run = replace(trace, runtime=np.round(trace.runtime * scale))
    return simulated_waits(profile.simulator(trace, run=run), len(trace))


def simulated_waits(sim: Any, jobs: int) -> np.ndarray:
    """Run ``sim`` (a simulator of a trace of ``jobs`` jobs) to its end; each trace job's
    wait (s), NaN for one that never started."""
    with gc_paused():
        sim.run()
    wait = np.full(jobs, np.nan)
    for r in sim.records:
        if r.trace_index >= 0 and r.start == r.start:
            wait[r.trace_index] = r.start - r.submit
    return wait


def loss(f: Fidelity) -> float:
    """The fit's error: KS + (1 - Spearman) + |ln| of the mean and p90 ratios."""

    def ln_ratio(a: float, b: float) -> float:
        return abs(math.log(max(a, 1e-3) / max(b, 1e-3)))

    sp = f.spearman if math.isfinite(f.spearman) else 0.0
    return (
        f.ks + (1 - sp) + ln_ratio(f.sim_mean_h, f.rec_mean_h) + ln_ratio(f.sim_p90_h, f.rec_p90_h)
    )


def starting_profile(
    trace: Trace, fraction: float = FIT_FRACTION, recent: float | None = None
) -> SiteProfile:
    """A profile of ``trace`` with nothing inferred but its size: FIFO, no limits, the whole
    cluster all the time, ``batch_sched_delay=3``; fitted on the first ``fraction`` (its
    last ``recent`` share)."""
    fit_mask, _, cut = split(trace, fraction, recent)
    units, peak = cluster_size(trace)
    return SiteProfile(
        trace=trace.source,
        sha256=trace.digest,
        unit=trace.unit,
        units=units,
        recorded_peak=peak,
        priority="fifo",
        batch_sched_delay=3.0,
        window_s=None,
        clamp=None,
        limits="",
        larger_jobs_exempt=False,
        fit_until_s=cut,
        fit_from_s=float(trace.submit[fit_mask].min()),
    )


#: two settings searched jointly: (name, options, name, options)
Pair = tuple[str, list[object], str, list[object]]
Score = Callable[[SiteProfile], float]
WithOption = Callable[[SiteProfile, str, object], SiteProfile]


def choose_recent(
    trace: Trace,
    *,
    fraction: float = FIT_FRACTION,
    jitters: int = FIT_JITTERS,
    share: float = RECENT_SHARE,
    progress: Callable[[str], None] | None = None,
) -> tuple[float | None, dict[str, list[float]]]:
    """Whether the fit should judge its settings on the last ``share`` of its period only
    (a site that drifts) or on all of it, chosen inside the past: each way is fitted on the
    first two thirds of the fit period and judged on the jobs submitted in its last third
    (``INNER_JITTERS`` jittered replays). The recent share is chosen only where its mean
    loss is lower by more than the larger spread of the two; otherwise (a tie, or too few
    jobs to check) the whole period. Returns the choice and each way's losses."""
    inner = fraction * FIT_FRACTION
    t0, t1 = float(trace.submit[0]), float(trace.submit[-1])
    a, b = t0 + inner * (t1 - t0), t0 + fraction * (t1 - t0)
    known = np.isfinite(trace.recorded_start)
    judged = known & (trace.submit >= a) & (trace.submit < b)
    try:
        fit_part = split(trace, inner, share)[0]
    except ProfileError:
        return None, {}
    if min(judged.sum(), fit_part.sum()) < MIN_CHECK_JOBS:
        return None, {}
    rec = (trace.recorded_start - trace.submit)[judged]
    losses: dict[str, list[float]] = {}
    for name, option in (("whole", None), (f"recent {share:g}", share)):

        def note(msg: str, name: str = name) -> None:
            if progress is not None:
                progress(f"recency check, {name}: {msg}")

        prof = fit(trace, fraction=inner, jitters=jitters, recent=option, progress=note)
        losses[name] = [
            loss(fidelity(replay_waits(trace, prof, jitter=JITTER, seed=s)[judged], rec))
            for s in range(INNER_JITTERS)
        ]
    whole, recent = (np.asarray(v) for v in losses.values())
    spread = max(float(whole.std()), float(recent.std()))
    return (share if recent.mean() < whole.mean() - spread else None), losses


def fit(
    trace: Trace,
    *,
    fraction: float = FIT_FRACTION,
    jitters: int = FIT_JITTERS,
    recent: float | str | None = None,
    progress: Callable[[str], None] | None = None,
) -> SiteProfile:
    """Fit a site profile on the first ``fraction`` of the trace (the pools where the log
    names partitions, the limits, the availability window, the priority,
    ``batch_sched_delay`` and ``bf_max_job_test``); each setting's loss is
    the mean over ``jitters`` replays with run times jittered by ``JITTER`` (one without
    jitter when 1): near saturation one replay is chaotic. Where the fit part records
    priorities, the priority is the setting that ranks them best (:func:`priority_fit`)
    and stays so; elsewhere it is chosen by the loss among ``PRIORITY_SETTINGS``, first
    jointly with the availability window. With ``recent``, the loss and the priority fit
    judge only the jobs of the last ``recent`` share of the fit period (:func:`split`); the
    whole log is still replayed, and the limits still come from the whole fit period.
    ``recent=AUTO`` chooses between the two inside the past (:func:`choose_recent`). Its
    last step moves the window, the outages and the depth two at a time (:func:`_polish`)."""
    recency: dict[str, list[float]] = {}
    if recent == AUTO:
        recent, recency = choose_recent(
            trace, fraction=fraction, jitters=jitters, progress=progress
        )
    elif isinstance(recent, str):
        raise ProfileError(f"recent: a share of the fit period or {AUTO!r}, not {recent!r}")
    fit_mask, _, cut = split(trace, fraction, recent)
    prof = starting_profile(trace, fraction, recent)
    units = prof.units
    lims = limit_candidates(trace, trace.submit < cut, units)
    rec = trace.recorded_start - trace.submit
    ranked = priority_fit(trace, fit_mask, units)
    prof.priority = max(ranked, key=ranked.__getitem__) if ranked else "fifo"
    prof.priority_spearman = ranked
    scores: dict[tuple[object, ...], float] = {}

    def score(p: SiteProfile) -> float:
        pools = (tuple(p.pools.items()), tuple(p.nested.items()), tuple(p.shared_partitions))
        key: tuple[object, ...] = (p.priority, p.batch_sched_delay, p.bf_max_job_test)
        key += (p.window_s, p.clamp, p.limits, p.outage_s, pools)
        if key not in scores:
            runs = [
                fidelity(
                    replay_waits(trace, p, jitter=JITTER if jitters > 1 else 0.0, seed=s)[fit_mask],
                    rec[fit_mask],
                )
                for s in range(jitters)
            ]
            f = runs[0]
            scores[key] = float(np.mean([loss(r) for r in runs]))
            prof.steps.append({"setting": p.describe(), "loss": scores[key], **f.as_dict()})
            if progress is not None:
                progress(f"loss {scores[key]:.3f}: {p.describe()}")
        return scores[key]

    limit_options = [("", False)] + [(lim.to_text(), True) for lim in lims]
    pool_options = pool_candidates(trace)
    axes: list[tuple[str, list[object]]] = [
        ("pools", pool_options),
        ("limits", list(limit_options)),
        ("window_s", list(WINDOWS)),
        ("clamp", list(CLAMPS)),
        ("outage_s", list(OUTAGES)),
        ("priority", list(PRIORITY_SETTINGS)),
        ("batch_sched_delay", list(DELAYS)),
        ("bf_max_job_test", list(BACKFILL_DEPTHS)),
    ]
    if ranked:  # the recorded Priority column chose it
        axes = [a for a in axes if a[0] != "priority"]

    def with_option(p: SiteProfile, name: str, opt: object) -> SiteProfile:
        return _with_option(p, name, opt, units)

    # limits and availability interact, and so do availability and priority (an order that
    # fragments the schedule lengthens waits as a smaller cluster does): start from the
    # best pair of limits and window, then of window and priority under those (and of pools
    # and priority where the log names partitions), then descend one setting at a time, in
    # rounds until nothing changes. Outages and the window both bound what may start: a
    # second start takes the best pair of those after the first pair. The better of the two
    # descents is kept (a greedy search from one start can stop short of the other).
    pairs: list[Pair] = [("limits", list(limit_options), "window_s", list(WINDOWS))]
    priorities: list[object] = [prof.priority] if ranked else list(PRIORITY_SETTINGS)
    if not ranked:
        pairs.append(("window_s", list(WINDOWS), "priority", priorities))
    if len(pool_options) > 1:  # pools and priority interact too: who waits for whom
        pairs.append(("pools", pool_options, "priority", priorities))
    outage_pair: Pair = ("outage_s", list(OUTAGES), "window_s", list(WINDOWS))

    first = _pair_search(prof, pairs[:1], score, with_option)
    best = _descend(_pair_search(first, pairs[1:], score, with_option), axes, score, with_option)
    second = _pair_search(first, [outage_pair], score, with_option)
    if second.outage_s is not None:  # else the first start already searched that world
        other = _pair_search(second, pairs[1:], score, with_option)
        best = min(best, _descend(other, axes, score, with_option), key=score)
    best = _polish(best, POLISH_PAIRS, score, with_option, axes)
    best.steps = prof.steps
    best.recent, best.recency = recent, recency
    f = fidelity(replay_waits(trace, best)[fit_mask], rec[fit_mask])
    best.fit = f.as_dict()
    best.created = datetime.now(UTC).isoformat(timespec="seconds")
    return best


def _pair_search(
    p: SiteProfile, pairs: list[Pair], score: Score, with_option: WithOption
) -> SiteProfile:
    """``p`` with, for each pair of settings in turn, the pair of their options that scores
    best."""
    for a, a_opts, b, b_opts in pairs:
        p = min(
            (with_option(with_option(p, a, x), b, y) for x in a_opts for y in b_opts),
            key=score,
        )
    return p


#: the pairs of settings that bound together what may start (the availability window, the
#: outages and backfill's depth): a descent moving one at a time can stop where only a move
#: of two lowers the loss, so the fit's last step tries every pair of their options
POLISH_PAIRS: tuple[tuple[str, tuple[object, ...]], ...] = (
    ("window_s", WINDOWS),
    ("outage_s", OUTAGES),
    ("bf_max_job_test", BACKFILL_DEPTHS),
)


def _polish(
    p: SiteProfile,
    settings: tuple[tuple[str, tuple[object, ...]], ...],
    score: Score,
    with_option: WithOption,
    axes: list[tuple[str, list[object]]],
) -> SiteProfile:
    """``p`` after moves of two ``settings`` at once (every pair of them, each pair's best
    options), each followed by a descent, in rounds (at most 2) while the score falls."""
    pairs: list[Pair] = [
        (a, list(a_opts), b, list(b_opts))
        for i, (a, a_opts) in enumerate(settings)
        for b, b_opts in settings[i + 1 :]
    ]
    for _ in range(2):
        cand = _descend(_pair_search(p, pairs, score, with_option), axes, score, with_option)
        if score(cand) >= score(p) - 1e-9:
            break
        p = cand
    return p


def _descend(
    p: SiteProfile, axes: list[tuple[str, list[object]]], score: Score, with_option: WithOption
) -> SiteProfile:
    """Coordinate descent from ``p``: one setting at a time, in rounds (at most 4) until
    nothing lowers the score."""
    for _ in range(4):
        changed = False
        for name, options in axes:
            for opt in options:
                cand = with_option(p, name, opt)
                if score(cand) < score(p) - 1e-9:
                    p, changed = cand, True
        if not changed:
            break
    return p


def _with_option(p: SiteProfile, name: str, opt: object, units: int) -> SiteProfile:
    """``p`` with one setting changed (a fit axis's option); ``units``: the one pool's size."""
    from dataclasses import replace

    if name == "limits":
        text, exempt = cast(tuple[str, bool], opt)
        return replace(p, limits=text, larger_jobs_exempt=exempt, steps=[])
    if name == "pools":
        pools, nested, shared = cast(tuple[dict[str, int], dict[str, str], list[str]], opt)
        size = sum(v for k, v in pools.items() if k not in nested) or units
        return replace(
            p, pools=pools, nested=nested, shared_partitions=shared, units=size, steps=[]
        )
    return replace(p, steps=[], **cast(dict[str, Any], {name: opt}))


def store(
    profile: SiteProfile, trace_path: str | os.PathLike[str], directory: Path | None = None
) -> Path:
    """Write the profile atomically beside the trace (``NAME.profile.json``), else in the
    user cache, or into ``directory``."""
    target = store_beside(
        profile.to_json(), profile.sha256, trace_path, SUFFIX, CACHE_DIR, directory
    )
    profile.path = str(target)
    return target


def load(trace: Trace) -> SiteProfile | None:
    """The stored profile made from this trace's file content, or None."""
    return find_stored(trace, SUFFIX, CACHE_DIR, SiteProfile.from_json)
