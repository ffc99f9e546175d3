"""Per-job rate caps around the lottery and SFQ dispatchers (themis.sched.ratecap)."""

from __future__ import annotations

import pytest

from themis.sched import JobTag, Scheduler, make_dispatcher
from themis.sched.ratecap import RateCapDispatcher

A = JobTag("a", "u1", "g", 1)
B = JobTag("b", "u2", "g", 1)
CHUNK = 1 << 16


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run(sched: Scheduler, clock: Clock, seconds: float, step: float = 1e-4) -> dict[str, int]:
    """Both jobs always backlogged; each dispatched chunk finishes after ``step``."""
    served = {"a": 0, "b": 0}
    for tag in (A, B):
        for _ in range(8):
            sched.submit(tag, CHUNK)
    while clock.now < seconds:
        for chunk in sched.take():
            served[chunk.tag.job_id] += chunk.nbytes
            sched.done(chunk)
            sched.submit(chunk.tag, CHUNK)
        clock.now += step
    return served


@pytest.mark.parametrize("inner", ["lottery", "sfq"])
def test_capped_job_gets_its_rate_the_other_the_rest(inner: str) -> None:
    clock = Clock()
    disp = RateCapDispatcher(make_dispatcher(inner), burst_s=0.01)
    sched = Scheduler("job-fair", disp, max_inflight=2, clock=clock)
    disp.set_rates({"a": 50 * CHUNK}, clock())  # 50 chunks/s
    served = run(sched, clock, 2.0)
    assert served["a"] / CHUNK / 2.0 == pytest.approx(50, rel=0.05)
    assert served["b"] > 20 * served["a"]  # work-conserving: b takes everything else
    assert "a" in disp.take_held()


def test_uncapping_releases_a_held_job() -> None:
    clock = Clock()
    disp = RateCapDispatcher(make_dispatcher("lottery"), burst_s=0.01)
    sched = Scheduler("job-fair", disp, max_inflight=2, clock=clock)
    disp.set_rates({"a": 10 * CHUNK, "b": 10 * CHUNK}, clock())
    run(sched, clock, 1.0)
    disp.set_rates({}, clock())
    before = dict(sched.stats().jobs["a"].__dict__)
    served = run(sched, clock, 2.0)
    # uncapped: the lottery splits the slots about evenly, far above 10 chunks/s each
    assert served["a"] / CHUNK > 1000 and served["b"] / CHUNK > 1000
    assert before["bytes_served"] > 0
    assert disp.wakeup(clock()) is None


def test_fifo_cannot_be_capped() -> None:
    with pytest.raises(ValueError, match="lottery or sfq"):
        RateCapDispatcher(make_dispatcher("fifo"))
