"""Slurm's multifactor priority: age, fair-share, job size, partition and QOS factors.

Fair-share is computed over a flat association tree (every user holds one equal share
directly under root) from ``U``, the user's decayed usage (unit-seconds, half-life
``PriorityDecayHalfLife``) over everyone's: either classic, ``F = 2^(-U/S)``
(``PriorityFlags=NO_FAIR_TREE``), or Fair Tree, Slurm's default since 19.05, where users are
ranked by usage and ``F = rank / associations`` (the tree's user associations: by default the
users, so that the least used user gets 1; equal usage, equal rank). Usage is folded at the
``PriorityCalcPeriod`` ticks, as slurmctld's decay thread does: lazily, at the next priority
refresh, or (``FairShare.decay_runs``, under ``BackfillCycle``) at every decay run a job's
start or end passes.

Offline, :func:`submit_priorities` gives the priority each job of a trace had as it was
submitted under a config, with the usage of the trace's recorded schedule: what a site
profile compares with a sacct log's ``Priority`` column (sim/log_inference.py).
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from sim import _backfill
from sim.config import SlurmConfig
from sim.traces.model import Trace

#: events folded in one numpy call between two queries from this many on (fewer: one by one)
FOLD_VECTOR = 32


def whole_second(now: float, epoch: float) -> float:
    """``now`` (seconds from ``epoch``, a Unix time) cut to the whole second of Unix time it
    falls in, as Slurm's ``time_t`` clock reads it."""
    return math.floor(now + epoch) - epoch


def _floats(a: np.ndarray) -> memoryview[float]:
    """A float64 array's memory: its items read and written in place as Python floats."""
    return cast("memoryview[float]", a.data)


class FairShare:
    """Per-user decayed usage, accumulated from running jobs."""

    #: (accrued, run_units, stamp) as memoryviews, made when needed (not pickled)
    _views: tuple[memoryview[float], memoryview[float], memoryview[float]] | None = None
    tree: bool = False  # Fair Tree (set per instance; a state pickled before it: classic)
    #: Fair Tree's divisor: the tree's user associations, at least the users ranked (0: those)
    associations: int = 0
    #: (period, phase, n_users, epoch): fold the usage at every decay run a change passes,
    #: as slurmctld's decay thread does, in whole seconds of Unix time (t = 0 at ``epoch``)
    #: as Slurm counts it (BackfillCycle); None: at the next priority refresh, to the instant
    decay_runs: tuple[float, float, int, float] | None = None

    def __init__(self, half_life: float, n_users: int = 1, tree: bool = False) -> None:
        self.half_life = half_life
        self.tree = tree  # Fair Tree's rank instead of classic 2^(-U/S)
        self.usage = np.zeros(max(n_users, 1))
        self.run_units = np.zeros(max(n_users, 1))
        self.accrued = np.zeros(max(n_users, 1))
        self.last = 0.0  # time up to which `accrued` is folded for users with no change
        self.stamp = np.zeros(max(n_users, 1))
        self.n_active_users = 0
        self.total = 0.0  # everyone's usage, as of the last tick
        self.scale = 1.0  # n_users of the last tick: each user's share is 1 / scale

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_views", None)
        return state

    def copy(self) -> FairShare:
        """An independent copy (the arrays copied; far cheaper than ``copy.deepcopy``)."""
        other = FairShare.__new__(FairShare)
        other.__dict__.update(self.__getstate__())
        for name in ("usage", "run_units", "accrued", "stamp"):
            setattr(other, name, getattr(self, name).copy())
        return other

    def _grow(self, user: int) -> None:
        n = self.usage.shape[0]
        if user < n:
            return
        extra = max(user + 1, 2 * n) - n
        for name in ("usage", "run_units", "accrued", "stamp"):
            arr = getattr(self, name)
            fill = self.last if name == "stamp" else 0.0
            setattr(self, name, np.concatenate([arr, np.full(extra, fill)]))
        self._views = None

    def change(self, user: int, delta_units: int, now: float) -> None:
        """A job of ``user`` started (+units) or ended (-units) at ``now`` (on memoryviews of
        the arrays: Python floats, the same arithmetic without NumPy's scalar overhead).

        With :attr:`decay_runs`, a decay run passed since the last fold is folded first,
        at its own time, and ``now`` counts in whole seconds: Slurm's job start and end
        times and its decay thread's clock are ``time_t``, so two users whose usage differs
        by less than a second's worth rank as whole seconds rank them. Without, the next
        refresh folds at its tick what ran until then, so a job that ended after that tick
        (and before the refresh) counts its run up to its end at the tick: its last seconds
        (less than a period) one tick early."""
        runs = self.decay_runs
        if runs is not None:
            period, phase, n_users, epoch = runs
            last_run = math.floor((now - phase) / period) * period + phase
            if last_run > self.last:
                self.tick(last_run, n_users)
            now = whole_second(now, epoch)
        if not 0 <= user < self.usage.shape[0]:
            self._grow(user)
        views = self._views
        if views is None:
            views = self._views = (
                _floats(self.accrued),
                _floats(self.run_units),
                _floats(self.stamp),
            )
        accrued, run_units, stamp = views
        accrued[user] += run_units[user] * (now - stamp[user])
        stamp[user] = now
        run_units[user] += delta_units

    def tick(self, now: float, n_users: int) -> tuple[np.ndarray, float, float, bool, int]:
        """Decay usage to ``now`` and add what running jobs accrued since the last tick
        (sim/_backfill.c). The factors are not computed here: only the queued users' are
        needed, and ``_backfill.refresh`` computes those from the :meth:`lazy_factors` this
        returns; :meth:`factor` and :meth:`factors` give any user's. With
        :attr:`decay_runs`, ``now`` counts in whole seconds (:meth:`change`)."""
        if self.decay_runs is not None:
            now = whole_second(now, self.decay_runs[3])
        dt = now - self.last
        if dt > 0:
            decay = 0.5 ** (dt / self.half_life) if self.half_life > 0 else 1.0
            self.total = _backfill.fairshare_tick(
                self.usage, self.run_units, self.accrued, self.stamp, now, decay, n_users, None
            )
            self.scale = float(max(n_users, 1))
            self.last = now
        return self.lazy_factors()

    def lazy_factors(self) -> tuple[np.ndarray, float, float, bool, int]:
        """The factors as ``_backfill.refresh`` takes them: (usage, total, scale, tree,
        associations)."""
        return self.usage, self.total, self.scale, self.tree, self.associations

    def factor(self, user: int) -> float:
        """The fair-share factor of ``user`` as of the last tick (1 before any usage),
        computed as ``_backfill`` computes it: classic ``2^(-(U/total) * scale)``, or with
        :attr:`tree` Fair Tree's ``rank / A`` over the first ``m = scale`` users (the log's;
        the rank is ``m`` less those of them with strictly less usage, and ``A`` is
        :attr:`associations`, at least ``m``)."""
        if self.total <= 0 or not 0 <= user < self.usage.shape[0]:
            return 1.0
        if self.tree:
            m = min(max(int(self.scale), 1), self.usage.shape[0])
            less = int(np.count_nonzero(self.usage[:m] < self.usage[user]))
            return (m - less) / max(self.associations, m)
        return math.exp2(-(float(self.usage[user]) / self.total) * self.scale)

    def factors(self) -> np.ndarray:
        """Every user's :meth:`factor` as of the last tick."""
        return np.array([self.factor(u) for u in range(self.usage.shape[0])])


class PriorityModel:
    """Computes the integer priority Slurm would give a pending job at a calc tick."""

    def __init__(self, cfg: SlurmConfig, total_units: int, unit: str, n_users: int) -> None:
        self.cfg = cfg
        self.total_units = max(total_units, 1)
        # Slurm averages a node fraction and a CPU fraction; with a CPU-counted cluster of
        # known node count, a job asking only for CPUs asks for one node.
        self.node_count = cfg.nodes if unit in ("cpus", "procs") and cfg.nodes else 0
        self.n_users = max(n_users, 1)
        self.fairshare = FairShare(cfg.decay_half_life, n_users, tree=cfg.fair_tree)
        max_pf = max((p.priority_job_factor for p in cfg.partitions.values()), default=1)
        self.max_part_factor = max(max_pf, 1)
        # Without accounting Slurm accrues no age and keeps no usage: both factors are 0.
        self.w_age = cfg.weight_age if cfg.accounting else 0
        self.w_fairshare = cfg.weight_fairshare if cfg.accounting else 0

        # Whether priorities can change between events (age or fair-share weighted).
        self.time_dependent = cfg.multifactor and (self.w_age > 0 or self.w_fairshare > 0)
        #: Ages in whole seconds of Unix time, as Slurm's ``time_t`` clock counts a job's
        #: accrue time and the decay thread's run: (epoch, the runs' sub-second offset), or
        #: None for ages to the instant (:meth:`accrue_time`)
        self.whole_age: tuple[float, float] | None = None
        self._static: dict[tuple[int, int, float], float] = {}  # static_part's, by arguments

    def size_factor(self, units: int) -> float:
        frac = min(units / self.total_units, 1.0)
        if self.node_count:
            nfrac = 1.0 / self.node_count
            return ((1 - nfrac) + (1 - frac)) / 2 if self.cfg.favor_small else (nfrac + frac) / 2
        return 1.0 - frac if self.cfg.favor_small else frac

    def static_part(self, units: int, part_factor: int, qos_factor: float) -> float:
        """The factors that do not change while a job waits (remembered by arguments)."""
        key = (units, part_factor, qos_factor)
        value = self._static.get(key)
        if value is None:
            c = self.cfg
            value = self._static[key] = (
                c.weight_job_size * self.size_factor(units)
                + c.weight_partition * part_factor / self.max_part_factor
                + c.weight_qos * qos_factor
            )
        return value

    def begin_tick(self, now: float) -> None:
        """Fold usage up to ``now``."""
        if self.w_fairshare > 0:
            self.fairshare.tick(now, self.n_users)

    def advance_ticks(
        self, order: list, first: float, limit: float, max_age: float
    ) -> tuple[float, bool]:
        """The calc ticks ``first``, ``first + period``, ... before ``limit`` at which nothing
        else happens, compiled: each folds the usage (:meth:`begin_tick`) and refreshes
        ``order`` (``_backfill.refresh``), up to the first whose order changed. Returns the
        last tick done and whether its order changed."""
        share = None
        fs = self.fairshare
        if self.w_fairshare > 0:
            share = (
                fs.usage, fs.run_units, fs.accrued, fs.stamp,
                fs.half_life, self.n_users, fs.last, fs.total, fs.tree, fs.associations,
            )  # fmt: skip
        tick, changed, total, last = _backfill.advance_ticks(
            order,
            first,
            self.cfg.calc_period,
            limit,
            float(self.w_age),
            max_age,
            float(self.w_fairshare),
            share,
            self.whole_age is not None,
        )
        if share is not None and last != fs.last:
            fs.total, fs.scale, fs.last = total, float(max(self.n_users, 1)), last
        return tick, changed

    # NOTE: refresh() in sim/_backfill.c computes the formula below for the whole queue at
    # each tick; keep the two in step (tests/sim/test_backfill_core.py compares them).

    @property
    def fairshare_factors(self) -> tuple[np.ndarray, float, float, bool, int] | None:
        """The fair-share factors as of the last :meth:`begin_tick`, as ``_backfill.refresh``
        takes them (:meth:`FairShare.lazy_factors`); None without fair-share weight."""
        return self.fairshare.lazy_factors() if self.w_fairshare > 0 else None

    def accrue_time(self, now: float) -> float:
        """A job's accrue time, as stored, for one that starts accruing age at ``now``.
        With :attr:`whole_age`: its whole second of Unix time plus the decay runs'
        sub-second offset, so that a run's time less it is the whole-second age Slurm
        computes (at a run, ``tick - accrue`` here and in ``_backfill.refresh`` alike)."""
        if self.whole_age is None:
            return now
        epoch, offset = self.whole_age
        return whole_second(now, epoch) + offset

    def priority(self, static: float, accrue_from: float, user: int, now: float) -> int:
        """Slurm truncates the weighted sum to an integer; 0 means held, so at least 1."""
        c = self.cfg
        if not c.multifactor:
            return 1
        p = static
        if self.w_age and not math.isnan(accrue_from):
            age = now - accrue_from
            if self.whole_age is not None:  # whole seconds; at a decay run as in C
                epoch, offset = self.whole_age
                age = round(whole_second(now, epoch) + offset - accrue_from)
            age = min(max(age, 0.0), c.max_age)
            p += self.w_age * (age / c.max_age if c.max_age > 0 else 1.0)
        if self.w_fairshare:
            p += self.w_fairshare * self.fairshare.factor(user)
        return max(int(p), 1)


def recorded_fairshare(
    trace: Trace, half_life: float, n_users: int | None = None, at: np.ndarray | None = None
) -> np.ndarray:
    """Each job's fair-share factor at ``at`` (default: its submission), from the usage its
    trace's recorded schedule accrued before then (jobs without a recorded start accrue
    none): :class:`FairShare`'s flat ``2^(-U/S)``, usage decayed continuously with
    ``half_life`` (0: never), ``S = 1/n_users`` (default: as the simulator counts users)."""
    when = trace.submit if at is None else np.asarray(at, dtype=np.float64)
    return _recorded_factors(trace, half_life, n_users, when, trace.user.astype(np.int64))


def fairshare_at(
    trace: Trace, half_life: float, times: np.ndarray, n_users: int | None = None
) -> np.ndarray:
    """Every user's fair-share factor at each of ``times``, as :func:`recorded_fairshare`
    computes one job's: an array of shape (len(times), users)."""
    return _recorded_factors(trace, half_life, n_users, np.asarray(times, np.float64), None)


def _recorded_factors(
    trace: Trace,
    half_life: float,
    n_users: int | None,
    when: np.ndarray,
    query_user: np.ndarray | None,
) -> np.ndarray:
    """Behind :func:`recorded_fairshare` (query ``i``: user ``query_user[i]`` at ``when[i]``)
    and :func:`fairshare_at` (``query_user`` None: every user at each time).

    A job of ``n`` units run over ``[s, e)`` has accrued, by ``t``, ``n (g(min(e, t)) -
    g(s))`` of usage as of a reference time ``r``, with ``g(x) = e^(k (x - r)) / k`` (``x``
    without decay). So each user's usage is a sum over the starts before ``t``, the ends up
    to ``t`` and ``g(t)`` times the units running then: three running sums, folded in
    between queries (the queries in time order), the reference moved up before ``g``
    could overflow."""
    n = len(trace)
    users = trace.user.astype(np.int64)
    n_users = int(users.max()) + 1 if n_users is None and n else max(n_users or 1, 1)
    size = max(int(users.max()) + 1 if n else 1, 1)
    # a job that ran no time accrued no usage; left in, its start and end cancel only to
    # rounding, and a total of nothing but such jobs would read as a share of it
    ran = np.flatnonzero(np.isfinite(trace.recorded_start) & (trace.runtime > 0))
    units = trace.units[ran].astype(np.float64)
    start = trace.recorded_start[ran]
    end = start + np.maximum(trace.runtime[ran], 0.0)
    by_start, by_end = np.argsort(start, kind="stable"), np.argsort(end, kind="stable")
    s_time, s_user, s_units = start[by_start], users[ran][by_start], units[by_start]
    e_time, e_user, e_units = end[by_end], users[ran][by_end], units[by_end]
    decays = half_life > 0 and math.isfinite(half_life)
    k = math.log(2) / half_life if decays else 0.0
    ref = float(min(s_time[0] if s_time.size else 0.0, when.min(initial=math.inf)))

    def g(x: Any) -> Any:
        """Usage one unit accrues by ``x`` as of the reference (an array or a float)."""
        if not decays:
            return x
        if isinstance(x, np.ndarray):
            return np.exp(k * (x - ref)) / k
        return math.exp(k * (x - ref)) / k

    accrued = np.zeros(size)  # sum of n g(e) over ends, less n g(s) over starts
    running = np.zeros(size)  # units running
    tot_accrued = tot_running = 0.0
    out = np.ones(when.size) if query_user is not None else np.ones((when.size, size))
    si = ei = 0
    for q in np.argsort(when, kind="stable").tolist():
        t = float(when[q])
        if decays and k * (t - ref) > 500:  # move the reference up to t
            scale = math.exp(-k * (t - ref))
            accrued *= scale
            tot_accrued *= scale
            ref = t
        s2 = int(np.searchsorted(s_time, t, "left"))  # starts before t
        e2 = int(np.searchsorted(e_time, t, "right"))  # ends up to t
        for times, who, amount, sign, lo, hi in (
            (s_time, s_user, s_units, -1.0, si, s2),
            (e_time, e_user, e_units, 1.0, ei, e2),
        ):
            if hi - lo > FOLD_VECTOR:
                add = sign * amount[lo:hi] * g(times[lo:hi])
                np.add.at(accrued, who[lo:hi], add)
                np.add.at(running, who[lo:hi], -sign * amount[lo:hi])
                tot_accrued += float(add.sum())
                tot_running -= sign * float(amount[lo:hi].sum())
                continue
            for i in range(lo, hi):
                u, x = int(who[i]), float(amount[i])
                add = sign * x * float(g(float(times[i])))
                accrued[u] += add
                running[u] -= sign * x
                tot_accrued += add
                tot_running -= sign * x
        si, ei = s2, e2
        now = float(g(t))
        total = tot_accrued + tot_running * now
        if total <= 0:
            continue
        if query_user is None:
            out[q] = 2.0 ** (-((accrued + running * now) / total) * n_users)
        else:
            u = int(query_user[q])
            out[q] = 2.0 ** (-((accrued[u] + running[u] * now) / total) * n_users)
    return out


def submit_priorities(trace: Trace, cfg: SlurmConfig, total_units: int) -> np.ndarray:
    """The priority ``cfg`` gives each trace job as it is submitted, with the fair-share usage
    of the trace's recorded schedule (:func:`recorded_fairshare`); the age factor is 0 then.
    Without multifactor priority (``priority/basic``), Slurm's decreasing priority in
    submission order."""
    n = len(trace)
    if not cfg.multifactor:
        return -np.arange(n, dtype=np.float64)
    n_users = int(trace.user.max()) + 1 if n else 1
    model = PriorityModel(cfg, total_units, trace.unit, n_users)
    parts = trace.partitions or [""] * n
    static = np.array(
        [
            model.static_part(int(u), cfg.partition(p).priority_job_factor, 0.0)
            for u, p in zip(trace.units.tolist(), parts, strict=True)
        ]
    )
    if model.w_fairshare:
        fs = recorded_fairshare(trace, cfg.decay_half_life, n_users)
        static = static + model.w_fairshare * fs
    return np.maximum(np.trunc(static), 1.0)
