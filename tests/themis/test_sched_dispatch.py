"""The Scheduler with the lottery, SFQ and FIFO dispatchers: ratios, conservation, chunking."""

from __future__ import annotations

from collections import Counter

import pytest

from themis.sched import JobTag, Policy, Scheduler

A = JobTag("a", "u1", "g", 1)
B = JobTag("b", "u2", "g", 4)


def drain(sched: Scheduler, n: int) -> list:
    """Dispatch and complete up to n chunks one at a time; returns them."""
    out = []
    for _ in range(n):
        c = sched.next()
        if c is None:
            break
        sched.done(c)
        out.append(c)
    return out


def fill(sched: Scheduler, tags, count: int, nbytes: int = 4096) -> None:
    for _ in range(count):
        for t in tags:
            sched.submit(t, nbytes)


def test_lottery_long_run_size_fair_is_1_to_4():
    s = Scheduler("size-fair", "lottery", seed=1)
    fill(s, [A, B], 20_000)
    c = Counter(ch.tag.job_id for ch in drain(s, 20_000))
    assert c["a"] / 20_000 == pytest.approx(0.2, abs=0.015)


def test_lottery_user_fair_with_two_jobs_against_one():
    a1, a2, b = JobTag("a1", "u1", "g", 1), JobTag("a2", "u1", "g", 1), JobTag("b", "u2", "g", 1)
    s = Scheduler("user-fair", "lottery", seed=2)
    fill(s, [a1, a2, b], 10_000)
    c = Counter(ch.tag.job_id for ch in drain(s, 12_000))
    assert c["b"] / 12_000 == pytest.approx(0.5, abs=0.02)
    assert c["a1"] / 12_000 == pytest.approx(0.25, abs=0.02)


def test_lottery_is_deterministic_given_the_seed():
    def order(seed):
        s = Scheduler("size-fair", "lottery", seed=seed)
        fill(s, [A, B], 200)
        return [ch.tag.job_id for ch in drain(s, 200)]

    assert order(5) == order(5)
    assert order(5) != order(6)


def test_sfq_exact_ratios_size_fair():
    s = Scheduler("size-fair", "sfq")
    fill(s, [A, B], 1000)
    c = Counter(ch.tag.job_id for ch in drain(s, 500))
    assert abs(c["a"] - 100) <= 1 and abs(c["b"] - 400) <= 1


def test_sfq_is_byte_fair_across_request_sizes():
    s = Scheduler("job-fair", "sfq")
    for _ in range(400):
        s.submit(A, 4096)
    for _ in range(100):
        s.submit(B, 65536)
    served = Counter()
    for ch in drain(s, 200):
        served[ch.tag.job_id] += ch.nbytes
    assert abs(served["a"] - served["b"]) <= 65536


def test_sfq_group_user_size_fair_exact():
    tags = [
        JobTag("a", "u1", "g1", 1),
        JobTag("b", "u1", "g1", 3),
        JobTag("c", "u2", "g1", 1),
        JobTag("d", "u3", "g2", 8),
    ]
    s = Scheduler("group-user-size-fair", "sfq")
    fill(s, tags, 1000)
    c = Counter(ch.tag.job_id for ch in drain(s, 1600))
    for job, share in {"a": 0.0625, "b": 0.1875, "c": 0.25, "d": 0.5}.items():
        assert abs(c[job] - 1600 * share) <= 2, (job, c)


@pytest.mark.parametrize("disp", ["lottery", "sfq"])
def test_work_conserving_idle_job_share_goes_to_busy_jobs(disp):
    c_tag = JobTag("c", "u3", "g", 16)  # never submits: its share must not be reserved
    s = Scheduler("size-fair", disp, seed=3)
    s.submit(c_tag, 0)
    drain(s, 1)  # c was active once, now idle
    fill(s, [A], 300)
    fill(s, [B], 100)
    got = drain(s, 10_000)
    assert len(got) == 400 and s.queued == 0  # never returned None while work was queued
    # once b is drained, a gets everything
    tail = [ch.tag.job_id for ch in got[-150:]]
    assert set(tail) == {"a"}


def test_max_inflight_is_never_exceeded():
    s = Scheduler("job-fair", "lottery", max_inflight=3)
    fill(s, [A, B], 10)
    held = [s.next() for _ in range(3)]
    assert all(held) and s.next() is None and s.inflight == 3
    s.done(held[0])
    assert s.next() is not None and s.next() is None
    with pytest.raises(ValueError):
        s.done(held[0])


def test_chunking_splits_large_requests_and_interleaves():
    s = Scheduler("job-fair", "sfq", chunk_bytes=1 << 20)
    big = s.submit(A, (5 << 19))  # 2.5 MiB -> 1 MiB, 1 MiB, 0.5 MiB
    assert [(c.offset, c.nbytes) for c in big.chunks] == [
        (0, 1 << 20),
        (1 << 20, 1 << 20),
        (2 << 20, 1 << 19),
    ]
    small = [s.submit(B, 1 << 20) for _ in range(3)]
    order = [ch.tag.job_id for ch in drain(s, 6)]
    assert order[:2] in (["a", "b"], ["b", "a"]) and order.count("a") == 3
    assert big.done and all(r.done for r in small)
    meta = s.submit(A, 0)
    assert len(meta.chunks) == 1 and meta.chunks[0].nbytes == 0


def test_fifo_keeps_arrival_order_across_jobs():
    s = Scheduler("fifo")
    seq = [A, B, B, A, B, A]
    for i, t in enumerate(seq):
        s.submit(t, 10, payload=i)
    assert [ch.payload for ch in drain(s, 10)] == list(range(6))


@pytest.mark.parametrize("disp", ["lottery", "sfq"])
def test_live_policy_change_keeps_everything(disp):
    s = Scheduler("job-fair", disp, seed=4, max_inflight=2)
    fill(s, [A, B], 500)
    first = drain(s, 200)
    held = s.next()  # one in flight across the switch
    s.set_policy(Policy.from_name("size-fair"))
    s.done(held)
    second = drain(s, 500)
    c1 = Counter(ch.tag.job_id for ch in first)
    c2 = Counter(ch.tag.job_id for ch in second)
    assert abs(c1["a"] - 100) <= 25 and abs(c2["a"] - 100) <= 30
    s.set_policy("fifo")
    rest = drain(s, 10_000)
    assert len(first) + 1 + len(second) + len(rest) == 1000 and s.queued == 0
    seqs = [ch.request.seq for ch in rest]
    assert seqs == sorted(seqs)


def test_cancel_withdraws_queued_chunks():
    s = Scheduler("job-fair", "sfq", chunk_bytes=100)
    r = s.submit(A, 1000)
    s.submit(B, 100)
    first = s.next()
    assert s.cancel(r) == (9 if first.tag == A else 10)
    assert s.next() is None  # max_inflight=1 still held by ``first``
    s.done(first)
    left = drain(s, 10)
    assert [c.tag.job_id for c in left] == ([] if first.tag == B else ["b"])
    assert r.done and s.queued == 0


def test_forget_is_deferred_until_drained_and_stats_follow():
    s = Scheduler("size-fair", "lottery", window=100)
    fill(s, [A, B], 50)
    drain(s, 20)
    st = s.stats()
    assert st.jobs["a"].target_share == pytest.approx(0.2)
    assert st.jobs["a"].ops_served + st.jobs["b"].ops_served == 20
    assert sum(j.achieved_share for j in st.jobs.values()) == pytest.approx(1.0)
    s.forget("a")
    assert "a" in s.stats().jobs
    drain(s, 200)
    assert "a" not in s.stats().jobs and s.stats().ops_served == 100


@pytest.mark.parametrize("disp", ["lottery", "sfq"])
def test_boosts_scale_a_jobs_weight(disp):
    s = Scheduler("job-fair", disp, seed=7)
    fill(s, [A, B], 3000)
    s.set_boosts({("j:a",): 3.0})
    c = Counter(ch.tag.job_id for ch in drain(s, 2000))
    assert c["a"] / 2000 == pytest.approx(0.75, abs=0.03)


def test_take_returns_a_batch_up_to_the_inflight_limit():
    s = Scheduler("size-fair", "sfq", max_inflight=5)
    fill(s, [A, B], 10)
    batch = s.take()
    assert len(batch) == 5 and s.inflight == 5 and s.take() == []
    for c in batch[:2]:
        s.done(c)
    assert len(s.take(1)) == 1 and len(s.take()) == 1


def test_small_request_is_its_own_chunk():
    s = Scheduler("job-fair", "fifo")
    r = s.submit(A, 100, payload="p")
    assert tuple(r.chunks) == (r,) and r.request is r and r.payload == "p" and r.tag == A
    c = s.next()
    assert c is r
    s.done(c)
    assert r.done


def test_zero_byte_metadata_ops_are_charged_min_charge():
    s = Scheduler("job-fair", "sfq", min_charge=4096)
    for _ in range(300):
        s.submit(A, 0)  # metadata: without a minimum charge it would always win
        s.submit(B, 4096)
    c = Counter(ch.tag.job_id for ch in drain(s, 200))
    assert c["a"] == c["b"] == 100


def test_live_switch_to_a_throttling_dispatcher_keeps_work():
    now = [0.0]
    s = Scheduler(
        "job-fair", "lottery", clock=lambda: now[0], rate=1000.0, burst=1000.0, min_charge=0
    )
    fill(s, [A, B], 5, nbytes=500)
    s.set_policy("job-fair", dispatcher="tbf")
    got = drain(s, 100)
    assert len(got) == 4 and s.queued == 6  # each job's 1000-byte burst
    now[0] = 10.0  # buckets refill to 1000 bytes only
    assert len(drain(s, 100)) == 4
    now[0] = 20.0
    assert len(drain(s, 100)) == 2 and s.queued == 0
