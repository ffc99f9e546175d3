"""TBF and GIFT-like baselines against hand-worked cases, on a hand-driven clock."""

from __future__ import annotations

import pytest

from themis.sched import JobTag, ReferenceScheduler, Scheduler

A = JobTag("a", "u1", "g", 1)
B = JobTag("b", "u2", "g", 1)


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def take(s: Scheduler) -> list:
    """Dispatch-and-complete everything allowed right now."""
    out = []
    while (c := s.next()) is not None:
        s.done(c)
        out.append(c)
    return out


def test_tbf_hand_worked_bucket():
    clk = Clock()
    s = Scheduler(
        "job-fair", "tbf", rate=1000.0, burst=1000.0, clock=clk, max_inflight=4, min_charge=0
    )
    for _ in range(10):
        s.submit(A, 500)
    assert len(take(s)) == 2  # the full 1000-byte burst: two 500-byte chunks
    assert s.wakeup_time() == pytest.approx(0.5)  # 500 more tokens take 0.5 s
    clk.t = 0.49
    assert take(s) == []  # not work-conserving: idle device, work queued
    clk.t = 0.5
    assert len(take(s)) == 1
    clk.t = 2.0  # 1.5 s later: capped at burst -> 2 chunks
    assert len(take(s)) == 2


def test_tbf_long_run_rate_and_per_job_rates():
    clk = Clock()
    s = Scheduler(
        "job-fair", "tbf", rate=1000.0, burst=100.0, rates={"b": 3000.0}, clock=clk, min_charge=0
    )
    for _ in range(2000):
        s.submit(A, 100)
        s.submit(B, 100)
    served = {"a": 0, "b": 0}
    while clk.t < 10.0:
        for c in take(s):
            served[c.tag.job_id] += c.nbytes
        clk.t = s.wakeup_time()
    assert served["a"] == pytest.approx(100 + 1000 * 10, abs=200)
    assert served["b"] == pytest.approx(100 + 3000 * 10, abs=200)


def test_tbf_chunk_larger_than_burst_is_not_stuck():
    clk = Clock()
    s = Scheduler("job-fair", "tbf", rate=100.0, burst=50.0, clock=clk, min_charge=0)
    s.submit(A, 200)
    s.submit(A, 200)
    assert len(take(s)) == 1  # tokens go to -150
    assert s.wakeup_time() == pytest.approx(2.0)  # back to +50 after 200 / 100 s


def test_gift_alone_runs_at_capacity():
    clk = Clock()
    s = Scheduler("job-fair", "gift", capacity=1000.0, burst_s=0.1, clock=clk, min_charge=0)
    for _ in range(50):
        s.submit(A, 100)
    assert len(take(s)) == 1 and s.wakeup_time() == pytest.approx(0.1)
    n = 1
    while clk.t < 1.0 - 1e-9:
        clk.t = s.wakeup_time()
        n += len(take(s))
    assert n == 11  # 100 B burst + 1000 B/s for 1 s


@pytest.mark.parametrize("impl", [Scheduler, ReferenceScheduler])
def test_gift_throttled_jobs_get_coupons_and_redeem_them(impl):
    clk = Clock()
    # fair rates 500 B/s each; buckets hold 0.2 s = 100 B; coupons up to 2 s = 1000 B
    s = impl(
        "job-fair", "gift", capacity=1000.0, burst_s=0.2, coupon_s=2.0, clock=clk, min_charge=0
    )
    for _ in range(50):
        s.submit(A, 100)
        s.submit(B, 100)
    first = s.next()  # both full (100 tokens, rate 500 B/s): a first
    assert first.tag == A
    clk.t = 1.0  # the device holds that chunk for a whole second
    s.done(first)
    # during that second each bucket overflowed: a 0+500 -> 100 (+400 coupons),
    # b 100+500 -> 100 (+500 coupons); now 1 + 1 token dispatches, then 900 B of coupons
    got = take(s)
    assert [c.tag.job_id for c in got[:2]] == ["a", "b"]
    assert len(got) == 2 + 9
    disp = s.dispatcher
    if impl is ReferenceScheduler:  # the compiled core keeps its buckets to itself
        jobs = {j: s.job_state(j).d for j in "ab"}
        assert jobs["a"].coupons == pytest.approx(0) and jobs["b"].coupons == pytest.approx(0)
    assert s.wakeup_time() == pytest.approx(1.2)  # throttled: next token in 100 / 500 s
    assert disp.name == "gift"


def test_gift_rates_follow_the_policy_shares():
    clk = Clock()
    s = Scheduler("size-fair", "gift", capacity=1000.0, burst_s=0.05, clock=clk, min_charge=0)
    big = JobTag("big", "u3", "g", 4)
    for _ in range(1000):
        s.submit(A, 10)
        s.submit(big, 10)
    served = {"a": 0, "big": 0}
    while clk.t < 5.0:
        for c in take(s):
            served[c.tag.job_id] += c.nbytes
        clk.t = s.wakeup_time()
    assert served["big"] / (served["a"] + served["big"]) == pytest.approx(0.8, abs=0.02)


def test_bad_baseline_options_are_clear_errors():
    with pytest.raises(ValueError, match="tbf rate must be > 0"):
        Scheduler("job-fair", "tbf", rate=0)
    with pytest.raises(ValueError, match="gift capacity"):
        Scheduler("job-fair", "gift", capacity=-1)
    with pytest.raises(ValueError, match="burst_s must be > 0"):
        Scheduler("job-fair", "gift", capacity=1, burst_s=0)
    with pytest.raises(ValueError, match="unknown dispatcher 'x'"):
        Scheduler("job-fair", "x")
