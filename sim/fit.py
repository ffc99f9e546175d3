"""``hpcsim fit``: a site's scheduling world chosen from its accounting log.

The candidates come from what the log shows (sim/log_inference.py): its size, its pools,
per-user limits and, where it records them, how each priority setting ranks its recorded
priorities. Beside them the fit tries an availability timeline (sim/availability.py: the
most units the recorded schedule used within a window around each moment, clamped while
jobs waited, with outages), the priority where the log records none, Slurm's
``batch_sched_delay`` and how deep backfill looks into the queue (``bf_max_job_test``).

The choices are made on the error of the log's first two thirds (``FIT_FRACTION``;
:func:`loss`), judged elsewhere (``bench/sim_twin.py``) on the last third: every pair of
limits and availability window, then coordinate descent over all settings (the priority
held at the recorded column's choice where there is one), then moves of two settings that
bound what may start (:func:`_polish`); ``hpcsim fit`` judges them on the whole fit part or
on its recent half, whichever forecast better inside the past (:func:`choose_recent`). The
result is a :class:`~sim.profile.SiteProfile`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import numpy as np

from sim.engine import RunawayReplay
from sim.fidelity import Fidelity, fidelity
from sim.limits import UserLimit
from sim.log_inference import (
    cluster_size,
    infer_limits,
    limit_candidates,
    pool_candidates,
    priority_fit,
    tier_candidates,
)
from sim.phases import gc_paused
from sim.profile import PRIORITY_SETTINGS, SiteProfile
from sim.start_order import infer_order
from sim.traces.model import Trace

FIT_FRACTION = 2 / 3
WARMUP = 0.1  # of the span, after the first recorded start: the replay starts empty
#: candidate settings the fit chooses among (availability windows in seconds; None: none)
WINDOWS: tuple[float | None, ...] = (None, 3600.0, 6 * 3600.0, 86400.0, 3 * 86400.0)
DELAYS = (0.0, 1.0, 3.0)
#: backfill's depth (``SchedulerParameters=bf_max_job_test``; None: Slurm's default, 500): a
#: site's backfill that reaches fewer jobs lets fewer short jobs past the queue
BACKFILL_DEPTHS: tuple[int | None, ...] = (None, 100, 50, 30, 20, 10)
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
#: the window narrowed to this while a recorded job waited beside units it left idle
#: (sim.idle_waits.narrowed_beside_idle; a clamp, where chosen, comes first); None: not
NARROWS: tuple[float | None, ...] = (None, 3600.0)
#: jittered replays each way when the fit checks that its limits earn their place
#: (:func:`earned_limits`)
LIMIT_CHECK_JITTERS = 6
#: Student's t for ``LIMIT_CHECK_JITTERS`` - 1 degrees of freedom, one-sided 90 %
LIMIT_CHECK_T = 1.476


class ProfileError(ValueError):
    """A trace that cannot be fitted (no recorded starts, too few jobs)."""


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
    max_pending: int | None = None,
) -> np.ndarray:
    """Each trace job's simulated wait (s) under ``profile`` (NaN: never started); with
    ``jitter``, run times scaled by 1 + jitter x N(0, 1) (seeded). ``max_pending``: see
    :func:`simulated_waits`."""
    from dataclasses import replace

    run = trace
    if jitter:
        rng = np.random.default_rng(seed)
        scale = np.clip(1 + jitter * rng.standard_normal(len(trace)), 0.5, 1.5)
        run = replace(trace, runtime=np.round(trace.runtime * scale))
    return simulated_waits(profile.simulator(trace, run=run), len(trace), max_pending)


#: a fitted setting whose replay queues more than this many times the most jobs the
#: recorded schedule ever had pending has run away (its order falls behind the record and
#: never catches up); the fit stops it and scores it as the worst, rather than replaying a
#: queue that only grows (each pass costs its length) to the end of a long log
RUNAWAY_FACTOR = 10


def recorded_max_pending(trace: Trace) -> int:
    """The most jobs the recorded schedule had submitted and not yet started at once."""
    known = np.isfinite(trace.recorded_start)
    t = np.r_[trace.submit[known], trace.recorded_start[known]]
    d = np.r_[np.ones(int(known.sum()), np.int64), -np.ones(int(known.sum()), np.int64)]
    order = np.lexsort((d, t))  # a start before a submission at the same moment
    return int(np.cumsum(d[order]).max(initial=0))


def runaway_bound(trace: Trace) -> int:
    """The most jobs a replay of ``trace`` may hold pending before it has run away:
    :data:`RUNAWAY_FACTOR` times the recorded schedule's most (at least 100)."""
    return int(RUNAWAY_FACTOR * max(recorded_max_pending(trace), 100))


def simulated_waits(sim: Any, jobs: int, max_pending: int | None = None) -> np.ndarray:
    """Run ``sim`` (a simulator of a trace of ``jobs`` jobs) to its end; each trace job's
    wait (s), NaN for one that never started. With ``max_pending``, raise
    :class:`RunawayReplay` as soon as more jobs than that are pending (``Simulator.run``)."""
    with gc_paused():
        sim.run(max_pending=max_pending)
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
Prefetch = Callable[[list[SiteProfile]], None]


def choose_recent(
    trace: Trace,
    *,
    fraction: float = FIT_FRACTION,
    jitters: int = FIT_JITTERS,
    share: float = RECENT_SHARE,
    progress: Callable[[str], None] | None = None,
    workers: int = 1,
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

        prof = fit(
            trace,
            fraction=inner,
            jitters=jitters,
            recent=option,
            progress=note,
            workers=workers,
        )
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
    workers: int = 1,
) -> SiteProfile:
    """Fit a site profile on the first ``fraction`` of the trace (the pools where the log
    names partitions, the limits, the availability window, the priority,
    ``batch_sched_delay`` and ``bf_max_job_test``); each setting's loss is the mean over
    ``jitters`` replays with run times jittered by ``JITTER`` (one without jitter when 1):
    near saturation one replay is chaotic. Where the fit part records priorities, the
    priority is the setting that ranks them best (:func:`sim.log_inference.priority_fit`)
    and stays so; elsewhere it is chosen by the loss among ``PRIORITY_SETTINGS``, first
    jointly with the availability window. With ``recent``, the loss and the priority fit
    judge only the jobs of the last ``recent`` share of the fit period (:func:`split`); the
    whole log is still replayed, and the limits still come from the whole fit period.
    ``recent=AUTO`` chooses between the two inside the past (:func:`choose_recent`). Its
    last step moves the window, the outages and the depth two at a time (:func:`_polish`).
    ``workers`` > 1 scores each search step's candidates in that many forked processes: the
    same profile, sooner."""
    recency: dict[str, list[float]] = {}
    if recent == AUTO:
        recent, recency = choose_recent(
            trace, fraction=fraction, jitters=jitters, progress=progress, workers=workers
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
    depths = list(BACKFILL_DEPTHS)
    order = None
    if not ranked:  # no recorded priorities: the start order, under the limits' walls
        order = infer_order(trace, units, infer_limits(trace, trace.submit < cut), until=cut)
    if order is not None and order.bounded:  # the recorded start order chose them
        prof.priority, prof.weights = order.priority, list(order.refined)
        prof.bf_max_job_test = order.depth
        prof.start_order = order.describe()
        depths += [order.depth] if order.depth not in depths else []
    with _Scores(trace, fit_mask, rec, jitters, prof, progress, workers) as score:
        fixed = bool(ranked or prof.start_order)
        tiers = tier_candidates(trace, fit_mask)
        best = _search(trace, prof, score, lims, fixed, depths, units, tiers)
    best = earned_limits(trace, best, fit_mask, rec, units)
    best.steps = prof.steps
    best.recent, best.recency = recent, recency
    f = fidelity(replay_waits(trace, best)[fit_mask], rec[fit_mask])
    best.fit = f.as_dict()
    best.created = datetime.now(UTC).isoformat(timespec="seconds")
    return best


def _search(
    trace: Trace,
    prof: SiteProfile,
    score: _Scores,
    lims: list[Any],
    fixed_priority: bool,
    depths: list[int | None],
    units: int,
    tiers: list[dict[str, int]] | None = None,
) -> SiteProfile:
    """The settings that score best from ``prof`` (see :func:`fit`); its priority stays
    where the log chose it (``fixed_priority``); ``tiers``: the partitions' priority tiers
    to try (:func:`sim.log_inference.tier_candidates`)."""
    prefetch = score.prefetch
    limit_options = [("", False, ())] + [(lim.to_text(), True, lim.user_limits) for lim in lims]
    pool_options = pool_candidates(trace)
    axes: list[tuple[str, list[object]]] = [
        ("pools", pool_options),
        ("limits", list(limit_options)),
        ("window_s", list(WINDOWS)),
        ("clamp", list(CLAMPS)),
        ("narrow_s", list(NARROWS)),
        ("outage_s", list(OUTAGES)),
        ("priority", list(PRIORITY_SETTINGS)),
        ("batch_sched_delay", list(DELAYS)),
        ("bf_max_job_test", list(depths)),
    ]
    if tiers and len(tiers) > 1:  # the log names partitions: which of them go first
        axes.insert(1, ("tiers", list(tiers)))
    if fixed_priority:  # the recorded Priority column or start order chose it
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
    priorities: list[object] = [prof.priority] if fixed_priority else list(PRIORITY_SETTINGS)
    if not fixed_priority:
        pairs.append(("window_s", list(WINDOWS), "priority", priorities))
    if len(pool_options) > 1:  # pools and priority interact too: who waits for whom
        pairs.append(("pools", pool_options, "priority", priorities))
    if tiers and len(tiers) > 1:  # and so do tiers and priority: which queue goes first
        pairs.append(("tiers", list(tiers), "priority", priorities))
    outage_pair: Pair = ("outage_s", list(OUTAGES), "window_s", list(WINDOWS))

    first = _pair_search(prof, pairs[:1], score, with_option, prefetch)
    best = _descend(
        _pair_search(first, pairs[1:], score, with_option, prefetch),
        axes,
        score,
        with_option,
        prefetch,
    )
    second = _pair_search(first, [outage_pair], score, with_option, prefetch)
    if second.outage_s is not None:  # else the first start already searched that world
        other = _pair_search(second, pairs[1:], score, with_option, prefetch)
        best = min(best, _descend(other, axes, score, with_option, prefetch), key=score)
    polish = tuple((k, tuple(depths) if k == "bf_max_job_test" else o) for k, o in POLISH_PAIRS)
    return _polish(best, polish, score, with_option, axes, prefetch)


def setting_loss(
    trace: Trace, p: SiteProfile, mask: np.ndarray, rec: np.ndarray, jitters: int
) -> tuple[float, dict[str, float]]:
    """The fit's loss of setting ``p`` over the jobs in ``mask`` (``rec``: recorded waits),
    the mean over ``jitters`` replays (one without jitter when 1), and the first replay's
    figures."""
    runs = _replays(trace, p, mask, rec, jitters)
    if isinstance(runs, str):
        return math.inf, {"runaway": runs}  # type: ignore[dict-item]
    return float(np.mean([loss(r) for r in runs])), runs[0].as_dict()


def _replays(
    trace: Trace, p: SiteProfile, mask: np.ndarray, rec: np.ndarray, jitters: int
) -> list[Fidelity] | str:
    """The figures of ``jitters`` replays of ``p`` over the jobs in ``mask`` (one without
    jitter when 1), or why one ran away (:class:`RunawayReplay`)."""
    bound = runaway_bound(trace)
    try:
        return [
            fidelity(
                replay_waits(
                    trace, p, jitter=JITTER if jitters > 1 else 0.0, seed=s, max_pending=bound
                )[mask],
                rec[mask],
            )
            for s in range(jitters)
        ]
    except RunawayReplay as e:
        return str(e)


def earned_limits(
    trace: Trace,
    p: SiteProfile,
    mask: np.ndarray,
    rec: np.ndarray,
    units: int,
    jitters: int = LIMIT_CHECK_JITTERS,
    t: float = LIMIT_CHECK_T,
) -> SiteProfile:
    """``p``, or ``p`` without its per-user limits where they do not earn their place.

    A log recorded without limits still shows a few users at one concurrency, and a limit
    there can lower the fit part's loss by chance (another setting's error, offset), then
    cost the future. So the fit keeps limits only where dropping them raises the fit
    part's loss, replay for replay over ``jitters`` jittered replays (the same run times
    each way), at one-sided 90 % confidence (``t``: Student's t for ``jitters`` - 1
    degrees of freedom). Both ways' losses are kept in the profile's ``limits_check``
    (empty: that way ran away)."""
    if not p.limits:
        return p
    bare = _with_option(p, "limits", ("", False, ()), units)
    losses: dict[str, list[float]] = {}
    for name, q in ((f"with {p.limits}", p), ("without", bare)):
        runs = _replays(trace, q, mask, rec, jitters)
        losses[name] = [] if isinstance(runs, str) else [loss(r) for r in runs]  # ran away
    kept, dropped = (np.asarray(v) for v in losses.values())
    earned = not dropped.size
    if kept.size and dropped.size:  # each jitter replays the same run times both ways
        gain = dropped - kept
        earned = gain.mean() > t * gain.std(ddof=1) / math.sqrt(gain.size)
    out = p if earned else bare
    out.limits_check = losses
    return out


#: what forked scoring processes read: (trace, mask, recorded waits, jitters)
_FORKED: tuple[Trace, np.ndarray, np.ndarray, int] | None = None


def _forked_loss(p: SiteProfile) -> tuple[float, dict[str, float]]:
    assert _FORKED is not None
    return setting_loss(_FORKED[0], p, *_FORKED[1:])


class _Scores:
    """Each setting's loss on the fit part, computed once; with ``workers`` > 1, a search
    step's candidates are scored together in forked processes (:meth:`prefetch`), with the
    same values as one by one. Each score is logged (``prof.steps``, ``progress``) as the
    search first uses it, so the log reads as the serial search's."""

    def __init__(
        self,
        trace: Trace,
        mask: np.ndarray,
        rec: np.ndarray,
        jitters: int,
        prof: SiteProfile,
        progress: Callable[[str], None] | None,
        workers: int,
    ) -> None:
        self.args = (trace, mask, rec, jitters)
        self.prof, self.progress, self.workers = prof, progress, workers
        self.scores: dict[tuple[object, ...], float] = {}
        self.ready: dict[tuple[object, ...], tuple[float, dict[str, float]]] = {}
        self.pool: Any = None

    def __enter__(self) -> _Scores:
        global _FORKED
        if self.workers > 1:
            import multiprocessing

            _FORKED = self.args
            self.pool = multiprocessing.get_context("fork").Pool(self.workers)
        return self

    def __exit__(self, *exc: object) -> None:
        global _FORKED
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool, _FORKED = None, None

    @staticmethod
    def key(p: SiteProfile) -> tuple[object, ...]:
        pools = (tuple(p.pools.items()), tuple(p.nested.items()), tuple(p.shared_partitions))
        key: tuple[object, ...] = (p.priority, tuple(p.weights), p.batch_sched_delay)
        tiers = tuple(sorted(p.tiers.items()))
        return key + (
            p.bf_max_job_test,
            p.window_s,
            p.clamp,
            p.narrow_s,
            p.limits,
            p.outage_s,
            pools,
            tiers,
        )

    def prefetch(self, cands: list[SiteProfile]) -> None:
        """Score the candidates not scored yet, in parallel (with workers)."""
        if self.pool is None:
            return
        todo: dict[tuple[object, ...], SiteProfile] = {}
        for p in cands:
            k = self.key(p)
            if k not in self.scores and k not in self.ready:
                todo.setdefault(k, p)
        if len(todo) > 1:
            for k, got in zip(
                todo, self.pool.map(_forked_loss, list(todo.values()), 1), strict=True
            ):
                self.ready[k] = got

    def __call__(self, p: SiteProfile) -> float:
        k = self.key(p)
        if k not in self.scores:
            trace, mask, rec, jitters = self.args
            got = self.ready.pop(k, None) or setting_loss(trace, p, mask, rec, jitters)
            self.scores[k] = got[0]
            self.prof.steps.append({"setting": p.describe(), "loss": got[0], **got[1]})
            if self.progress is not None:
                self.progress(f"loss {got[0]:.3f}: {p.describe()}")
        return self.scores[k]


def _pair_search(
    p: SiteProfile,
    pairs: list[Pair],
    score: Score,
    with_option: WithOption,
    prefetch: Prefetch | None = None,
) -> SiteProfile:
    """``p`` with, for each pair of settings in turn, the pair of their options that scores
    best."""
    for a, a_opts, b, b_opts in pairs:
        cands = [with_option(with_option(p, a, x), b, y) for x in a_opts for y in b_opts]
        if prefetch is not None:
            prefetch(cands)
        p = min(cands, key=score)
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
    prefetch: Prefetch | None = None,
) -> SiteProfile:
    """``p`` after moves of two ``settings`` at once (every pair of them, each pair's best
    options), each followed by a descent, in rounds (at most 2) while the score falls."""
    pairs: list[Pair] = [
        (a, list(a_opts), b, list(b_opts))
        for i, (a, a_opts) in enumerate(settings)
        for b, b_opts in settings[i + 1 :]
    ]
    for _ in range(2):
        cand = _descend(
            _pair_search(p, pairs, score, with_option, prefetch), axes, score, with_option, prefetch
        )
        if score(cand) >= score(p) - 1e-9:
            break
        p = cand
    return p


def _descend(
    p: SiteProfile,
    axes: list[tuple[str, list[object]]],
    score: Score,
    with_option: WithOption,
    prefetch: Prefetch | None = None,
) -> SiteProfile:
    """Coordinate descent from ``p``: one setting at a time, in rounds (at most 4) until
    nothing lowers the score."""
    for _ in range(4):
        changed = False
        for name, options in axes:
            if prefetch is not None:
                prefetch([with_option(p, name, opt) for opt in options])
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
        text, exempt, users = cast(tuple[str, bool, tuple[UserLimit, ...]], opt)
        return replace(
            p,
            limits=text,
            larger_jobs_exempt=exempt,
            user_limits=[list(u) for u in users],
            steps=[],
        )
    if name == "pools":
        pools, nested, shared = cast(tuple[dict[str, int], dict[str, str], list[str]], opt)
        size = sum(v for k, v in pools.items() if k not in nested) or units
        return replace(
            p, pools=pools, nested=nested, shared_partitions=shared, units=size, steps=[]
        )
    return replace(p, steps=[], **cast(dict[str, Any], {name: opt}))
