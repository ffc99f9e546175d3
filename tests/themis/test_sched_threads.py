"""The C-level API (core_api.h): acquire/release from many pthreads without the GIL."""

from __future__ import annotations

import random
import threading
import time

import pytest

from themis.sched import JobTag, Scheduler, _core, core_api
from themis.sched.items import QUEUED

A = JobTag("a", "u1", "g", 1)
B = JobTag("b", "u2", "g", 4)


def test_capsule_is_published_under_its_documented_name():
    cap = core_api()
    assert type(cap).__name__ == "PyCapsule"
    assert "themis.sched._core._C_API" in repr(cap)
    assert _core.API_VERSION == 1


def test_lottery_draws_are_pythons_random():
    for seed in (0, 1, 7919, 2**33 + 5):
        rng = random.Random(seed)
        assert _core.mt_draws(seed, 2000) == [rng.random() for _ in range(2000)]


def run(sched: Scheduler, threads: int, seconds: float = 0.4) -> tuple[int, int]:
    ha, hb = sched.job_handle(A), sched.job_handle(B)
    res = _core.stress(sched, [(ha, 4096)] * threads + [(hb, 4096)] * threads, seconds, 1e-4)
    assert all(err == 0 for _, err in res)
    return sum(c for c, _ in res[:threads]), sum(c for c, _ in res[threads:])


@pytest.mark.parametrize("dispatcher", ["lottery", "sfq", "gift"])
def test_threads_get_the_size_fair_shares(dispatcher):
    opts = {"capacity": 8e6} if dispatcher == "gift" else {}
    s = Scheduler("size-fair", dispatcher, max_inflight=2, **opts)
    a, b = run(s, 4)
    assert a + b > 100
    assert a / (a + b) == pytest.approx(0.2, abs=0.05)
    st = s.stats()
    assert st.inflight == 0 and st.queued_chunks == 0  # every thread came back: no deadlock
    assert st.jobs["a"].ops_served == a and st.jobs["b"].bytes_served == 4096 * b
    assert st.jobs["b"].queue_wait_s > 0


def test_fifo_threads_share_equally_and_tbf_caps_each_job():
    a, b = run(Scheduler("job-fair", "fifo", max_inflight=2), 4)
    assert a / (a + b) == pytest.approx(0.5, abs=0.05)
    s = Scheduler("job-fair", "tbf", max_inflight=4, rate=2e6, burst=4096.0)
    a, b = run(s, 3, seconds=0.5)  # 2 MB/s each: about 244 chunks per job in 0.5 s
    assert 150 < a < 300 and 150 < b < 300


def test_threads_and_python_share_one_scheduler():
    s = Scheduler("size-fair", "lottery", max_inflight=1)
    out: list = []
    t = threading.Thread(target=lambda: out.append(run(s, 2, seconds=0.3)))
    t.start()
    served = 0
    while t.is_alive() or s.queued or s.inflight:  # Python's own requests, meanwhile
        req = s.submit(A, 4096)
        while req.state == QUEUED:
            for c in s.take():
                s.done(c)
                served += 1
            time.sleep(1e-4)
    t.join()
    assert served > 10 and sum(out[0]) > 10
    assert s.inflight == 0 and s.queued == 0


def test_a_forgotten_job_handle_is_refused():
    s = Scheduler("size-fair", "lottery")
    h = s.job_handle(A)
    s.forget("a")
    assert s.job_handle(A) >= 0  # a fresh registration
    res = _core.stress(s, [(h + 1000, 4096)], 0.05, 0.0)
    assert res[0][1] < 0  # -ESRCH
