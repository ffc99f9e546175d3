"""The compiled core (themis/sched/_core.c) against the Python reference model
(themis.sched.reference): same operations, same seeds -> the same decisions."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from themis.sched import POLICIES, JobTag, ReferenceScheduler, Scheduler, make_dispatcher
from themis.sched.items import DISPATCHED
from themis.sched.ratecap import RateCapDispatcher

USERS = ["u0", "u1", "u2"]
GROUPS = ["g0", "g1"]
OPTIONS: dict[str, dict[str, Any]] = {
    "lottery": {},
    "sfq": {},
    "fifo": {},
    "tbf": {"rate": 2000.0, "burst": 3000.0, "rates": {"j1": 500.0}},
    "gift": {"capacity": 4000.0, "burst_s": 0.5, "coupon_s": 1.0},
}
# the long runs: about 2 MB/s of requests over 20 simulated seconds
LONG_OPTIONS: dict[str, dict[str, Any]] = {
    "tbf": {"rate": 2e5, "burst": 3e4, "rates": {"j1": 5e4}},
    "gift": {"capacity": 2e6, "burst_s": 0.05, "coupon_s": 0.5},
}


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def tag(i: int, nodes: int) -> JobTag:
    return JobTag(f"j{i}", USERS[i % 3], GROUPS[i % 2], nodes)


ops = st.one_of(
    st.tuples(st.just("submit"), st.integers(0, 5), st.sampled_from([0, 100, 4096, 5000, 9000])),
    st.tuples(st.just("take"), st.integers(0, 4)),
    st.tuples(st.just("done"), st.integers(0, 50)),
    st.tuples(st.just("cancel"), st.integers(0, 50)),
    st.tuples(st.just("forget"), st.integers(0, 5)),
    st.tuples(st.just("tick"), st.sampled_from([0.0, 0.001, 0.1, 0.7, 2.0])),
    st.tuples(
        st.just("boost"), st.dictionaries(st.integers(0, 5), st.sampled_from([0.5, 2.0, 3.0]))
    ),
    st.tuples(
        st.just("policy"),
        st.sampled_from(sorted(POLICIES)),
        st.sampled_from([None, "lottery", "sfq", "fifo", "tbf", "gift"]),
    ),
    st.tuples(st.just("resize"), st.integers(0, 5), st.integers(1, 8)),
)


def key(c: Any) -> tuple[str, int, int]:
    return (c.tag.job_id, c.request.seq, c.index)


def same_stats(a: Any, b: Any) -> None:
    sa, sb = a.stats(), b.stats()
    assert (sa.queued_chunks, sa.inflight, sa.bytes_served, sa.ops_served) == (
        sb.queued_chunks,
        sb.inflight,
        sb.bytes_served,
        sb.ops_served,
    )
    assert sa.jobs.keys() == sb.jobs.keys()
    for jid, ja in sa.jobs.items():
        jb = sb.jobs[jid]
        fields = ("bytes_served", "ops_served", "queued_chunks", "queued_bytes", "inflight")
        assert [getattr(ja, f) for f in fields] == [getattr(jb, f) for f in fields], jid


@settings(max_examples=400, deadline=None)
@given(
    policy=st.sampled_from(sorted(POLICIES)),
    dispatcher=st.sampled_from(sorted(OPTIONS)),
    seed=st.integers(0, 2**40),
    inflight=st.integers(1, 4),
    script=st.lists(ops, max_size=80),
)
def test_core_and_reference_make_the_same_decisions(policy, dispatcher, seed, inflight, script):
    clock = Clock()
    kw = dict(seed=seed, max_inflight=inflight, chunk_bytes=4096, window=8, clock=clock)
    kw.update(OPTIONS[dispatcher])
    ref = ReferenceScheduler(policy, dispatcher, **kw)
    core = Scheduler(policy, dispatcher, **kw)
    replay(ref, core, clock, script, None if OPTIONS[dispatcher] else dispatcher)


@settings(max_examples=300, deadline=None)
@given(
    policy=st.sampled_from(sorted(set(POLICIES) - {"fifo"})),
    inner=st.sampled_from(["lottery", "sfq"]),
    seed=st.integers(0, 2**40),
    inflight=st.integers(1, 4),
    burst_s=st.sampled_from([0.01, 0.5]),
    script=st.lists(
        st.one_of(
            ops,
            st.tuples(
                st.just("rates"),
                st.dictionaries(st.integers(0, 5), st.sampled_from([0.0, 1000.0, 5000.0, 2e4])),
            ),
            st.tuples(st.just("held")),
        ),
        max_size=80,
    ),
)
@example(  # a cap's rate lowered: its bucket fills at the old rate until then (found by CI)
    policy="group-user-size-fair",
    inner="lottery",
    seed=0,
    inflight=1,
    burst_s=0.01,
    script=[
        ("submit", 3, 0),
        ("rates", {0: 0.0, 1: 0.0, 3: 5000.0}),
        ("take", 0),
        ("tick", 0.001),
        ("rates", {0: 0.0, 1: 0.0, 2: 0.0, 3: 1000.0}),
        ("submit", 3, 0),
        ("done", 0),
    ],
)
def test_rate_caps_make_the_same_decisions(policy, inner, seed, inflight, burst_s, script):
    """Cluster mode's rate caps (RateCapDispatcher around lottery/SFQ), run by the core."""
    clock = Clock()

    def capped() -> RateCapDispatcher:
        return RateCapDispatcher(make_dispatcher(inner, seed=seed), burst_s=burst_s)

    kw = dict(max_inflight=inflight, chunk_bytes=4096, window=8, clock=clock)
    ref = ReferenceScheduler(policy, capped(), **kw)
    core = Scheduler(policy, capped(), **kw)
    assert isinstance(core, Scheduler)
    replay(ref, core, clock, script, capped)


def replay(ref: Any, core: Any, clock: Clock, script: list, switch: Any) -> None:  # noqa: C901
    """Run the script on both; ``switch``: the dispatcher set_policy may change to (a name, a
    factory of fresh dispatcher objects, or None: keep)."""
    nodes = {i: 1 + i % 4 for i in range(6)}
    rates: dict[str, float] = {}
    reqs: list[tuple[Any, Any]] = []
    running: list[tuple[Any, Any]] = []
    for op in script:
        if op[0] == "submit":
            t = tag(op[1], nodes[op[1]])
            reqs.append((ref.submit(t, op[2]), core.submit(t, op[2])))
        elif op[0] == "take":
            got_ref, got_core = ref.take(op[1]), core.take(op[1])
            assert [key(c) for c in got_ref] == [key(c) for c in got_core]
            running.extend(zip(got_ref, got_core, strict=True))
        elif op[0] == "done" and running:
            cr, cc = running.pop(op[1] % len(running))
            ref.done(cr)
            core.done(cc)
        elif op[0] == "cancel" and reqs:
            rr, rc = reqs[op[1] % len(reqs)]
            assert ref.cancel(rr) == core.cancel(rc)
            assert [c.state for c in rr.chunks] == [c.state for c in rc.chunks]
        elif op[0] == "forget":
            ref.forget(f"j{op[1]}")
            core.forget(f"j{op[1]}")
        elif op[0] == "tick":
            clock.t += op[1]
        elif op[0] == "boost":
            boosts = {ref.policy.path(tag(i, nodes[i])): b for i, b in op[1].items()}
            ref.set_boosts(boosts)
            core.set_boosts(boosts)
        elif op[0] == "policy" and callable(switch):  # fresh rate-cap objects, as a reload
            if op[1] == "fifo":  # the fifo policy takes no caps
                continue
            ref.set_policy(op[1], switch())
            core.set_policy(op[1], switch())
            for sched in (ref, core):
                sched.dispatcher.set_rates(rates, clock.t)
        elif op[0] == "policy":
            other = op[2] if switch and not OPTIONS.get(op[2] or "") else None
            ref.set_policy(op[1], other)
            core.set_policy(op[1], other)
        elif op[0] == "rates":
            rates = {f"j{i}": r for i, r in op[1].items()}
            ref.dispatcher.set_rates(rates, clock.t)
            core.dispatcher.set_rates(rates, clock.t)
        elif op[0] == "held":
            live = set(ref.stats().jobs)
            assert ref.dispatcher.take_held() & live == core.dispatcher.take_held()
        elif op[0] == "resize":
            nodes[op[1]] = op[2]
        assert ref.wakeup_time() == core.wakeup_time()
        assert (ref.queued, ref.inflight) == (core.queued, core.inflight)
    same_stats(ref, core)
    # drain: both finish the same way
    for _ in range(200):
        clock.t += 0.5
        got_ref, got_core = ref.take(), core.take()
        assert [key(c) for c in got_ref] == [key(c) for c in got_core]
        for cr, cc in list(running) + list(zip(got_ref, got_core, strict=True)):
            if cr.state == DISPATCHED:
                ref.done(cr)
                core.done(cc)
        running.clear()
        if not ref.queued:
            break
    same_stats(ref, core)
    assert [c.state for r, _ in reqs for c in r.chunks] == [
        c.state for _, r in reqs for c in r.chunks
    ]


@pytest.mark.parametrize("dispatcher", sorted(OPTIONS))
@pytest.mark.parametrize("policy", ["size-fair", "user-fair", "group-user-size-fair"])
def test_long_random_workloads_dispatch_in_the_same_order(policy, dispatcher):
    """Thousands of requests from 40 jobs with boosts and forgets: identical dispatch order."""
    rng = random.Random(f"{policy}/{dispatcher}")
    clock = Clock()
    kw = dict(seed=rng.randrange(2**32), max_inflight=3, chunk_bytes=8192, window=64, clock=clock)
    kw.update(LONG_OPTIONS.get(dispatcher, {}))
    ref, core = ReferenceScheduler(policy, dispatcher, **kw), Scheduler(policy, dispatcher, **kw)
    tags = [JobTag(f"j{i}", f"u{i % 7}", f"g{i % 3}", 1 + i % 5) for i in range(40)]
    running: list[tuple[Any, Any]] = []
    order_ref, order_core = [], []
    for step in range(6000):
        r = rng.random()
        if r < 0.5:
            t = rng.choice(tags)
            n = rng.choice([0, 512, 4096, 8192, 20000])
            ref.submit(t, n)
            core.submit(t, n)
        elif r < 0.8 and running:
            cr, cc = running.pop(rng.randrange(len(running)))
            ref.done(cr)
            core.done(cc)
        elif r < 0.81:
            jid = rng.choice(tags).job_id
            ref.forget(jid)
            core.forget(jid)
        elif r < 0.815:
            boosts = {ref.policy.path(t): rng.choice([0.5, 1.5, 3.0]) for t in rng.sample(tags, 8)}
            ref.set_boosts(boosts)
            core.set_boosts(boosts)
        clock.t += rng.choice([0.0, 0.0005, 0.01])
        got_ref, got_core = ref.take(), core.take()
        order_ref += [key(c) for c in got_ref]
        order_core += [key(c) for c in got_core]
        running += zip(got_ref, got_core, strict=True)
        assert order_ref == order_core, step
    assert len(order_ref) > 1000
    same_stats(ref, core)
