"""Baseline decision logic on hand-made contexts (the simulator-backed parts are tested in
test_env.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mirage.agents import load_policy
from mirage.agents.baselines import BASELINES, Oracle, upper_bound_index
from mirage.agents.common.policy import Decision, DecisionContext
from mirage.observation import ChainState

H = 3600.0


def ctx(remaining_h, waits_h=(), estimate=None, what_if=None, step=0):
    limit = 48 * H
    chain = ChainState(
        now=limit - remaining_h * H,
        pred_units=1,
        pred_limit=limit,
        pred_submit=0.0,
        pred_start=0.0,
        succ_units=2,
        succ_limit=limit,
    )
    return DecisionContext(
        chain=chain,
        obs=np.zeros((2, 2), np.float32),
        recent_waits=np.array(waits_h, float) * H,
        decision_interval=600.0,
        step=step,
        estimate_start=None if estimate is None else (lambda: chain.now + estimate * H),
        what_if=what_if,
    )


def test_reactive_and_dependency():
    assert load_policy("reactive").decide(ctx(0.1)) == Decision.WAIT
    assert load_policy("dependency").decide(ctx(47)) == Decision.SUBMIT_AFTERANY


def test_average_submits_at_mean_wait():
    avg = load_policy("average")
    assert avg.decide(ctx(5, [2, 4, 6])) == Decision.WAIT
    assert avg.decide(ctx(4, [2, 4, 6])) == Decision.SUBMIT
    assert avg.decide(ctx(0.5)) == Decision.WAIT  # no recent starts: reactive


def test_start_estimate():
    pol = load_policy("start-estimate")
    assert pol.decide(ctx(3, estimate=2)) == Decision.WAIT
    assert pol.decide(ctx(2, estimate=2.5)) == Decision.SUBMIT
    assert pol.decide(ctx(2)) == Decision.WAIT  # no estimate available


def test_qbets_index_is_an_upper_confidence_bound():
    # median with 95% confidence from 20 samples: the 15th order statistic (0-based 14)
    assert upper_bound_index(20, 0.5, 0.95) == 14
    assert upper_bound_index(3, 0.9, 0.95) == 2  # too few samples: the largest
    pol = load_policy("quantile")
    waits = list(range(1, 21))
    assert pol.decide(ctx(15.5, waits)) == Decision.WAIT
    assert pol.decide(ctx(15, waits)) == Decision.SUBMIT


def test_oracle_finds_the_cheapest_submit():
    n = int(48 * H / 600)
    # submitting k decisions from now gives gap = (k - 100) * 10 min, noisy near zero
    gaps = {k: (k - 100) * 600.0 for k in range(n + 1)}
    gaps[99] = 60.0  # backfill luck: a small interruption one step earlier
    calls = []

    def what_if(k):
        calls.append(k)
        return gaps[min(k, n)]

    oracle = Oracle(scan=3)
    oracle.reset()
    c = ctx(48, what_if=what_if)
    assert oracle.decide(c) == Decision.WAIT
    assert oracle._plan == 100  # gap 0
    assert len(calls) < 30  # bisection, not a full scan
    assert oracle.decide(ctx(48 - 100 / 6, what_if=what_if, step=100)) == Decision.SUBMIT
    # overlap is charged per node of the successor (2 here): -1 step costs 2x20 min
    assert oracle.cost(-600, 2) == pytest.approx(2 / 6)
    assert oracle.cost(1800, 2) == pytest.approx(0.5)


def test_oracle_without_simulator_is_reactive():
    oracle = Oracle()
    oracle.reset()
    assert oracle.decide(ctx(1)) == Decision.WAIT


def test_registry():
    assert set(BASELINES) == {
        "reactive",
        "average",
        "dependency",
        "start-estimate",
        "quantile",
        "oracle",
    }
    with pytest.raises(ValueError, match="unknown policy"):
        load_policy("nope")
    assert math.isfinite(upper_bound_index(1, 0.5, 0.95))


def test_summary_table_skips_load_levels_without_chains():
    from mirage.eval.report import markdown_table, summarise

    # Two chains, both with a long reactive gap: only "all" and "heavy" have chains.
    rows = [
        {"agent": a, "t0": t0, "gap": gap, "overlap_node_hours": 0.0, "error": ""}
        for t0 in (0.0, 1.0)
        for a, gap in (("reactive", 20 * 3600.0), ("average", 3600.0))
    ]
    table = markdown_table(summarise(rows, ["reactive", "average"]))
    assert "### load: low (0 chains)" in table and "nan" not in table
    assert "| average | 1.00 |" in table
