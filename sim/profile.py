"""A site profile: the scheduling world ``hpcsim fit`` inferred from a log (sim/fit.py),
stored beside the trace and replayed by default.

A :class:`SiteProfile` is a ``slurm.conf`` subset (size, pools and partitions, priority,
``batch_sched_delay``, backfill's depth) plus ``sacctmgr`` limits and how the availability
timeline is drawn from the recorded schedule, with the trace's SHA-256. It is stored as
``NAME.profile.json`` where calibrations are (sim/calibration.py) and found by content
(:func:`load`); ``hpcsim replay``, ``mirage`` and the studies use it by default.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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
from sim.idle_waits import narrowed_beside_idle
from sim.limit_breaks import limit_steps
from sim.limits import QosLimits
from sim.traces.model import Trace

SCHEMA = 1
SUFFIX = ".profile.json"
CACHE_DIR = "profiles"
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

#: partition names a profile's slurm.conf can hold; a log naming others is fitted on one pool
PART_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: the pool of a log's jobs that name no partition
UNNAMED = "unnamed"


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
    #: the fit part (:func:`sim.log_inference.priority_fit`); empty when the log has none
    priority_spearman: dict[str, float] = field(default_factory=dict)
    #: node pools: each of the log's partitions (UNNAMED: jobs naming none) and its units;
    #: those not ``nested`` are disjoint and sum to ``units``; empty: one pool for all jobs
    pools: dict[str, int] = field(default_factory=dict)
    #: the log's partitions on one shared pool (every node in each: Slurm's main scheduler
    #: still blocks only the partition of a job that does not fit); empty with pools
    shared_partitions: list[str] = field(default_factory=list)
    #: pools nested in another: the partition's nodes are the first of its parent's (a
    #: debug partition on some of the batch nodes); it adds no units of its own. As large
    #: as its parent, it is an alias: the same nodes, whose jobs the parent's availability
    #: timeline is fitted to with the parent's
    nested: dict[str, str] = field(default_factory=dict)
    #: while a recorded job waited that would have fit in units the window left idle, the
    #: window narrows to this many seconds (:func:`sim.idle_waits.narrowed_beside_idle`)
    narrow_s: float | None = None
    #: an OUTAGES entry: stretches of at least this many seconds without a recorded start
    #: while a job that would have fit waited are windows in which nothing may start
    outage_s: float | None = None
    #: the share of the fit period, at its end, whose jobs judged the settings (None: all)
    recent: float | None = None
    #: how that was chosen inside the past (:func:`sim.fit.choose_recent`): each way's losses on
    #: the last third of the fit period, fitted on the first two; empty when not checked
    recency: dict[str, list[float]] = field(default_factory=dict)
    #: whether the fit's limits earned their place (:func:`sim.fit.earned_limits`): the fit
    #: part's losses with them and without; empty when the fit chose none
    limits_check: dict[str, list[float]] = field(default_factory=dict)
    #: ``bf_max_job_test`` (None: Slurm's default): a BACKFILL_DEPTHS entry, or the one
    #: the recorded start order showed
    bf_max_job_test: int | None = None
    #: where the recorded start order chose the priority and depth to start the search
    #: from (:func:`sim.start_order.infer_order`), its evidence; else empty
    start_order: str = ""
    #: multifactor weights off the grid that the start order showed (:func:`weight_lines`'s
    #: half-life in days, age rate, job-size share, age cap in days); they replace the
    #: ``priority`` setting's lines; empty: that setting's own
    weights: list[float] = field(default_factory=list)
    #: Slurm's ``PriorityTier`` of the log's partitions (a higher tier's jobs are scheduled
    #: first: an express queue); empty: one tier (:func:`sim.log_inference.tier_candidates`)
    tiers: dict[str, int] = field(default_factory=dict)
    #: users with limits of their own, higher than ``limits``: [user, running jobs, nodes,
    #: CPUs] (null: no limit), the few whose recorded schedule ran past a wall every other
    #: user kept, at their recorded maxima (:func:`sim.log_inference.past_walls`)
    user_limits: list[list[int | None]] = field(default_factory=list)
    path: str = ""

    def slurm_conf(self, total_units: int | None = None) -> str:
        """The ``slurm.conf`` subset of this profile (its pools scaled to ``total_units``
        where that differs from its size)."""
        params = f"batch_sched_delay={self.batch_sched_delay:g}"
        if self.bf_max_job_test is not None:
            params += f",bf_max_job_test={self.bf_max_job_test}"
        lines = [f"SchedulerParameters={params}"]
        prio = list(weight_lines(*self.weights)) if self.weights else priority_lines(self.priority)
        return "\n".join(lines + prio + self.pool_lines(total_units)) + "\n"

    def pool_lines(self, total_units: int | None) -> list[str]:
        """``NodeName``/``PartitionName`` lines of the pools: one node per unit (one CPU
        each on a CPU-counted cluster), the largest pool the default partition."""
        cpus = " CPUs=1" if self.unit in ("cpus", "procs") else ""
        shared = self.shared_partitions or ([] if self.pools else sorted(self.tiers))
        if shared:  # tiers without pools: the partitions share every node
            default = UNNAMED if UNNAMED in shared else shared[0]
            return [f"NodeName=n[1-{total_units or self.units}]" + cpus] + [
                f"PartitionName={name} Nodes=ALL"
                + self._tier(name)
                + (" Default=YES" if name == default else "")
                for name in shared
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
            out.append(f"PartitionName={name} Nodes={nodes}{self._tier(name)}{mark}")
        return out

    def _tier(self, name: str) -> str:
        tier = self.tiers.get(name, 1)
        return f" PriorityTier={tier}" if tier != 1 else ""

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
            user_limits=tuple((u[0], u[1], u[2], u[3]) for u in self.user_limits),  # type: ignore[misc]
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
        aliases = {k: v for k, v in self.nested.items() if self.pools[k] >= self.pools[v]}
        parents = {v for k, v in self.nested.items() if k not in aliases}
        return {  # a timeline for each pool that no other partition shares in part
            name: self._fitted(
                trace.select(np.isin(names, [name, *aliases_of(aliases, name)])),
                units,
                sizes[name],
            )
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
        elif self.clamp is None and self.narrow_s is not None:
            avail = narrowed_beside_idle(
                trace, units, window=self.window_s, narrow=self.narrow_s, use=use
            )
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
        if self.window_s is not None and self.clamp is None and self.narrow_s is not None:
            win += f", {self.narrow_s / 3600:g} h while a job waited beside idle units"
        if self.outage_s is not None:
            win += f", outages after {self.outage_s / 3600:g} h without a start"
        prio = self.priority
        if self.priority in self.priority_spearman:
            prio += f" (recorded Priority, Spearman {self.priority_spearman[prio]:.3f})"
        elif self.start_order:
            prio += " (recorded start order)"
        if self.weights:
            prio += f" with its weights refined ({weights_text(self.weights)})"
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
        if any(t != 1 for t in self.tiers.values()):
            pools += (
                " (tiers "
                + ", ".join(
                    f"{k} {t}"
                    for k, t in sorted(self.tiers.items(), key=lambda kv: -kv[1])
                    if t != 1
                )
                + ")"
            )
        depth = "" if self.bf_max_job_test is None else f", bf_max_job_test={self.bf_max_job_test}"
        limits = self.limits or "none"
        if self.limits and self.user_limits:
            n = len(self.user_limits)
            limits += f" ({n} user{'s' if n > 1 else ''} with their own)"
        return (
            f"{self.units} {self.unit}{pools}, priority {prio}, batch_sched_delay="
            f"{self.batch_sched_delay:g}{depth}, limits {limits}, "
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
            not PART_NAME.fullmatch(str(k)) or not isinstance(v, int) or v < 1
            for k, v in pools.items()
        ):
            raise ValueError("pools: partition names to positive unit counts expected")
        shared = d.get("shared_partitions", [])
        if not isinstance(shared, list) or not all(PART_NAME.fullmatch(str(k)) for k in shared):
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
        d["user_limits"] = _user_limits(d)
        for key in ("recency", "limits_check"):
            _check_losses(d, key)
        depth = d.get("bf_max_job_test")
        if depth is not None and (type(depth) is not int or depth < 1):
            raise ValueError(f"bf_max_job_test: a positive whole number or null, not {depth!r}")
        weights = d.get("weights", [])
        if not isinstance(weights, list) or (
            weights
            and (
                len(weights) != 4
                or not all(type(w) in (int, float) and 0 <= w < 1e6 for w in weights)
                or not weights[0] > 0
                or not weights[3] > 0
            )
        ):
            raise ValueError(
                "weights: [] or [half-life days > 0, age rate >= 0, job-size share >= 0, "
                f"age cap days > 0] expected, not {weights!r}"
            )
        recent = d.get("recent")
        if recent is not None and (not isinstance(recent, int | float) or not 0 < recent <= 1):
            raise ValueError(f"recent: a share in (0, 1] or null expected, not {recent!r}")
        tiers = d.get("tiers", {})
        if not isinstance(tiers, dict) or any(
            not PART_NAME.fullmatch(str(k)) or type(v) is not int or not 0 <= v <= 65533
            for k, v in tiers.items()
        ):
            raise ValueError("tiers: partition names to PriorityTier values (0-65533) expected")
        return cls(**d, path=path)


def aliases_of(aliases: dict[str, str], pool: str) -> list[str]:
    """The partitions that are aliases of ``pool`` (sorted): the same nodes."""
    return sorted(k for k, v in aliases.items() if v == pool)


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
    for k, parent in nested.items():  # an alias (as large as its parent) stays one
        small = min(out[parent], max(1, round(pools[k] * total / have)))
        out[k] = out[parent] if pools[k] >= pools[parent] else small
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


def weight_lines(
    half_days: float, rate: float, size: float, max_age_days: float
) -> tuple[str, ...]:
    """Multifactor ``slurm.conf`` lines: classic fair share (what the fit compares with a
    log's ``Priority`` column) at 100000, the others relative to it (the age factor's rate
    per day of age, the job-size share), times in whole hours."""
    age = rate * max_age_days
    return (
        "AccountingStorageType=accounting_storage/slurmdbd",
        "PriorityType=priority/multifactor",
        "PriorityFlags=NO_FAIR_TREE",
        "PriorityWeightFairshare=100000",
        f"PriorityWeightAge={round(age * 100000)}",
        f"PriorityWeightJobSize={round(size * 100000)}",
        f"PriorityMaxAge={round(max_age_days * 24)}:00:00",
        f"PriorityDecayHalfLife={round(half_days * 24)}:00:00",
    )


def weights_text(weights: Sequence[float]) -> str:
    """:func:`weight_lines`'s weights in a few words (``WeightAge=... DecayHalfLife=...``)."""
    return " ".join(w.removeprefix("Priority") for w in weight_lines(*weights)[3:])


def priority_lines(key: str) -> list[str]:
    """The ``slurm.conf`` lines of a ``PRIORITY_SETTINGS`` entry (none for FIFO)."""
    half_life, size_weight = PRIORITY_SETTINGS[key]
    if not half_life:
        return []
    return [
        "AccountingStorageType=accounting_storage/slurmdbd",
        "PriorityType=priority/multifactor",
        "PriorityFlags=NO_FAIR_TREE",
        "PriorityWeightFairshare=100000",
        "PriorityWeightAge=1000",
        *([f"PriorityWeightJobSize={size_weight}"] if size_weight else []),
        "PriorityMaxAge=7-0",
        f"PriorityDecayHalfLife={half_life}",
    ]


def partition_names(trace: Trace) -> np.ndarray:
    """Each job's partition as a profile names it (UNNAMED where the log names none)."""
    return np.array([p or UNNAMED for p in trace.partitions])


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


def _check_losses(d: dict[str, Any], key: str) -> None:
    """A stored check's losses (``recency``, ``limits_check``): names to lists of numbers."""
    v = d.get(key, {})
    if not isinstance(v, dict) or not all(
        isinstance(k, str) and isinstance(x, list) and all(type(y) in (int, float) for y in x)
        for k, x in v.items()
    ):
        raise ValueError(f"{key}: names to lists of losses expected, not {v!r}"[:200])


def _user_limits(d: dict[str, Any]) -> list[list[int | None]]:
    """A stored profile's ``user_limits`` checked, by user (``exempt_users``, as stored
    before them, are users with no limit of their own)."""
    legacy = d.pop("exempt_users", [])
    if not isinstance(legacy, list) or not all(type(u) is int and u >= 0 for u in legacy):
        raise ValueError("exempt_users: a list of user numbers expected")
    own = d.get("user_limits", [])
    if not isinstance(own, list) or not all(
        isinstance(u, list)
        and len(u) == 4
        and type(u[0]) is int
        and u[0] >= 0
        and all(v is None or (type(v) is int and v >= 0) for v in u[1:])
        for u in own
    ):
        raise ValueError(
            "user_limits: a list of [user, jobs, nodes, CPUs] expected (null: no limit)"
        )
    own = own + [[u, None, None, None] for u in legacy]
    if len({u[0] for u in own}) != len(own):
        raise ValueError("user_limits: a user listed twice")
    return sorted(own)
