"""Hand-written submission policies, through the same :class:`Policy` interface as agents.

* ``reactive``: never submits early; the driver submits at the predecessor's end.
* ``average``: submits when the predecessor's remaining time falls below the mean wait of
  recently started jobs.
* ``dependency``: submits at the first decision with ``afterany`` on the predecessor (the
  successor is not eligible, and its age does not accrue, until the predecessor ends).
* ``start-estimate``: submits when the remaining time falls below the scheduler's start
  estimate for the successor (``squeue --start``/``sbatch --test-only``-like).
* ``quantile``: QBETS-like: submits when the remaining time falls below an upper confidence
  bound on a quantile of recent waits.
* ``oracle``: the best submit time in hindsight, found by trying submit times from a
  simulator snapshot (a lower bound; simulator only).
"""

from __future__ import annotations

import math

import numpy as np

from mirage.agents.common.policy import Decision, DecisionContext


class Reactive:
    """Submit at the predecessor's end."""

    name = "reactive"

    def reset(self) -> None:
        pass

    def decide(self, ctx: DecisionContext) -> Decision:
        return Decision.WAIT


class Average:
    """Submit the mean recent wait before the predecessor's end."""

    name = "average"

    def reset(self) -> None:
        pass

    def decide(self, ctx: DecisionContext) -> Decision:
        waits = ctx.recent_waits
        expected = float(waits.mean()) if waits.shape[0] else 0.0
        return Decision.SUBMIT if ctx.chain.pred_remaining <= expected else Decision.WAIT


class Dependency:
    """Submit at once, with an ``afterany`` dependency on the predecessor."""

    name = "dependency"

    def reset(self) -> None:
        pass

    def decide(self, ctx: DecisionContext) -> Decision:
        return Decision.SUBMIT_AFTERANY


class StartEstimate:
    """Submit when the remaining time falls below the scheduler's start estimate."""

    name = "start-estimate"
    needs_simulator = True

    def reset(self) -> None:
        pass

    def decide(self, ctx: DecisionContext) -> Decision:
        if ctx.estimate_start is None:
            return Decision.WAIT
        start = ctx.estimate_start()
        if start is None:
            return Decision.WAIT
        expected = max(start - ctx.chain.now, 0.0)
        return Decision.SUBMIT if ctx.chain.pred_remaining <= expected else Decision.WAIT


def upper_bound_index(n: int, quantile: float, confidence: float) -> int:
    """QBETS' rule: the smallest order statistic (0-based) that bounds the ``quantile`` from
    above with probability ``confidence``, or ``n - 1`` when ``n`` samples are too few."""
    cdf = 0.0
    log_q, log_p = math.log(quantile), math.log1p(-quantile)
    for k in range(n):
        cdf += math.exp(
            math.lgamma(n + 1)
            - math.lgamma(k + 1)
            - math.lgamma(n - k + 1)
            + k * log_q
            + (n - k) * log_p
        )
        if cdf >= confidence:
            return k
    return n - 1


class Quantile:
    """Submit when the remaining time falls below a QBETS-like bound on recent waits."""

    name = "quantile"

    def __init__(self, quantile: float = 0.5, confidence: float = 0.95) -> None:
        self.quantile = quantile
        self.confidence = confidence

    def reset(self) -> None:
        pass

    def decide(self, ctx: DecisionContext) -> Decision:
        waits = ctx.recent_waits
        if not waits.shape[0]:
            return Decision.WAIT
        sw = np.sort(waits)
        bound = float(sw[upper_bound_index(sw.shape[0], self.quantile, self.confidence)])
        return Decision.SUBMIT if ctx.chain.pred_remaining <= bound else Decision.WAIT


class Oracle:
    """The best submit decision in hindsight (needs ``ctx.what_if``, i.e. the simulator).

    Assumes the gap grows with the submit time (true up to backfill noise): bisects for the
    first decision whose gap is >= 0, then scans ``scan`` decisions either side and keeps the
    cheapest by ``interruption_weight * hours + overlap_weight * node-hours``.
    """

    name = "oracle"
    needs_simulator = True

    def __init__(
        self, interruption_weight: float = 1.0, overlap_weight: float = 1.0, scan: int = 3
    ) -> None:
        self.wi = interruption_weight
        self.wo = overlap_weight
        self.scan = scan
        self._plan: int | None = None

    def reset(self) -> None:
        self._plan = None

    def cost(self, gap: float, units: int) -> float:
        return self.wi * max(gap, 0.0) / 3600 + self.wo * max(-gap, 0.0) / 3600 * units

    def _search(self, ctx: DecisionContext) -> int:
        assert ctx.what_if is not None
        n = ctx.n_left
        gaps: dict[int, float] = {}

        def gap(k: int) -> float:
            if k not in gaps:
                gaps[k] = ctx.what_if(k)  # type: ignore[misc]
            return gaps[k]

        lo, hi = 0, n  # gap(n) (the reactive submit) is never negative
        if gap(0) >= 0:
            hi = 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if gap(mid) >= 0:
                hi = mid
            else:
                lo = mid
        for k in range(max(hi - self.scan, 0), min(hi + self.scan, n) + 1):
            gap(k)
        units = ctx.chain.succ_units
        return min(gaps, key=lambda k: (self.cost(gaps[k], units), k))

    def decide(self, ctx: DecisionContext) -> Decision:
        if self._plan is None:
            if ctx.what_if is None:
                return Decision.WAIT
            self._plan = ctx.step + self._search(ctx)
        return Decision.SUBMIT if ctx.step >= self._plan else Decision.WAIT


BASELINES = {
    cls.name: cls for cls in (Reactive, Average, Dependency, StartEstimate, Quantile, Oracle)
}
