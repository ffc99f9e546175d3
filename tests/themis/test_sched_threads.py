"""The C-level API (core_api.h): acquire/release from many pthreads without the GIL."""

from __future__ import annotations

import ctypes
import random
import threading
import time

import pytest

from themis.sched import JobTag, Scheduler, _core, core_api, make_dispatcher
from themis.sched.items import QUEUED
from themis.sched.ratecap import RateCapDispatcher

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


def test_control_calls_from_python_while_threads_run():
    """set_policy, set_boosts, stats, max_inflight and other jobs' forget, live: no deadlock,
    nothing lost."""
    s = Scheduler("size-fair", "lottery", max_inflight=2)
    out: list = []
    t = threading.Thread(target=lambda: out.append(run(s, 3, seconds=0.5)))
    t.start()
    policies = [("user-fair", "sfq"), ("size-fair", "lottery"), ("job-fair", "fifo")]
    i = 0
    while t.is_alive():
        policy, disp = policies[i % 3]
        s.set_policy(policy, disp)
        s.set_boosts({s.policy.path(A): 2.0})
        s.max_inflight = 1 + i % 3
        other = JobTag(f"x{i}", "u9", "g", 1)
        req = s.submit(other, 10)
        while req.state == QUEUED:  # a Python request among the threads' chunks
            for c in s.take():
                s.done(c)
            time.sleep(1e-4)
        s.forget(other.job_id)
        assert s.stats().inflight <= 3
        i += 1
        time.sleep(0.005)
    t.join()
    a, b = out[0]
    assert a > 10 and b > 10 and i > 5
    st = s.stats()
    assert st.inflight == 0 and st.queued_chunks == 0


def test_rate_caps_hold_back_threads_too():
    """Cluster mode: a capped job's threads get its cap, the other job the rest."""
    disp = RateCapDispatcher(make_dispatcher("lottery"), burst_s=0.01)
    s = Scheduler("job-fair", disp, max_inflight=2)
    disp.set_rates({"a": 2e6}, time.monotonic())  # about 244 chunks of 4 KiB in 0.5 s
    a, b = run(s, 3, seconds=0.5)
    assert 150 < a < 300 and b > a
    assert "a" in disp.take_held()


def test_an_earlier_release_wakes_the_timekeeper():
    """The timekeeper sleeps until the next release of a held job and is woken only when that
    time moves earlier, not at every request: a job held after it, due sooner, must still be
    released on time."""
    disp = RateCapDispatcher(make_dispatcher("lottery"), burst_s=0.01)
    s = Scheduler("job-fair", disp, max_inflight=2)
    disp.set_rates({"a": 2e3, "b": 2e6}, time.monotonic())  # a: 2 s after a 4-KiB chunk
    a, b = run(s, 2, seconds=0.5)
    assert a < 10
    assert 150 < b < 300  # 2 MB/s: about 244 chunks of 4 KiB in 0.5 s


class _Api(ctypes.Structure):
    """core_api.h's themis_core_api, as another extension sees it."""

    _fields_ = [
        ("version", ctypes.c_int),
        ("from_object", ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)),
        (
            "acquire",
            ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint64),
        ),
        ("release", ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)),
    ]


def test_the_capsule_table_from_python_threads_through_ctypes():
    """The table of core_api.h, called like a C extension would (ctypes drops the GIL around
    acquire/release): Python threads share a size-fair scheduler 1:4."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    api = _Api.from_address(get(core_api(), b"themis.sched._core._C_API"))
    assert api.version == 1
    s = Scheduler("size-fair", "lottery", max_inflight=1)
    core = api.from_object(s)
    assert core
    with pytest.raises(TypeError):
        api.from_object(object())
    counts = {"a": 0, "b": 0}
    stop = threading.Event()

    def worker(tag: JobTag) -> None:
        job = s.job_handle(tag)
        while not stop.is_set():
            ticket = api.acquire(core, job, 4096)
            assert ticket >= 0
            time.sleep(2e-4)
            counts[tag.job_id] += 1
            api.release(core, ticket)

    threads = [threading.Thread(target=worker, args=(t,)) for t in (A, B) * 3]
    for t in threads:
        t.start()
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)
    a, b = counts["a"], counts["b"]
    assert a + b > 100 and a / (a + b) == pytest.approx(0.2, abs=0.06)
    assert api.acquire(core, s.job_handle(A), 2 << 20) < 0  # over chunk_bytes: -EINVAL
