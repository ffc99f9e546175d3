"""The global allocation (themis.sched.allocation) against hand-worked water-filling cases."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from themis.sched import JobTag, Policy
from themis.sched.allocation import INF, NodeUsage, allocate, allocate_usage, waterfill


def approx(values: list[float]) -> object:
    return pytest.approx(values, rel=1e-9, abs=1e-9)


def test_waterfill_equal_weights_one_capped() -> None:
    # level L: 2 + L + L = 10 -> L = 4
    assert waterfill(10, [1, 1, 1], [2, INF, INF]) == approx([2, 4, 4])


def test_waterfill_weights_all_backlogged() -> None:
    assert waterfill(12, [1, 2, 3], [INF, INF, INF]) == approx([2, 4, 6])


def test_waterfill_two_capped_in_turn() -> None:
    # d/w order: 1 (1), 3 (3), 10/2 (5).  fair 12/4 = 3 >= 1 -> 1; 11/3 >= 3 -> 3; rest 8 -> 8
    assert waterfill(12, [1, 2, 1], [1, 10, 3]) == approx([1, 8, 3])


def test_waterfill_everything_fits_leftover_by_weight() -> None:
    # demands 6 of 10: the spare 4 is split 1:1:2
    assert waterfill(10, [1, 1, 2], [1, 2, 3]) == approx([2, 3, 5])


def test_waterfill_capped_child_exactly_at_its_share() -> None:
    assert waterfill(9, [1, 1, 1], [3, INF, INF]) == approx([3, 3, 3])


def test_waterfill_empty_and_zero_budget() -> None:
    assert waterfill(5, [], []) == []
    assert waterfill(0, [1, 1], [INF, 3]) == approx([0, 0])


T1 = JobTag("1", "alice", "phys", 1)
T2 = JobTag("2", "alice", "phys", 2)
T3 = JobTag("3", "bob", "chem", 1)
T4 = JobTag("4", "carol", "phys", 4)


def test_size_fair_all_busy() -> None:
    a = allocate(Policy.from_name("size-fair"), {T1: INF, T2: INF, T3: INF}, 100)
    assert [a.jobs[j] for j in "123"] == approx([25, 50, 25])


def test_job_fair_idle_share_flows_to_busy_jobs() -> None:
    # job 3 uses only 10: the other two split the remaining 90
    a = allocate(Policy.from_name("job-fair"), {T1: INF, T2: INF, T3: 10}, 100)
    assert [a.jobs[j] for j in "123"] == approx([45, 45, 10])


def test_user_fair_inside_and_across_users() -> None:
    # alice {1: busy, 2: 10} vs bob {3: busy}: users 50/50; inside alice job 2 keeps 10
    a = allocate(Policy.from_name("user-fair"), {T1: INF, T2: 10, T3: INF}, 100)
    assert [a.jobs[j] for j in "123"] == approx([40, 10, 50])
    assert a.paths[("u:alice",)] == pytest.approx(50)
    # bob wants only 20: alice gets 80, of which job 2 still keeps its 10
    a = allocate(Policy.from_name("user-fair"), {T1: INF, T2: 10, T3: 20}, 100)
    assert [a.jobs[j] for j in "123"] == approx([70, 10, 20])


def test_group_user_size_fair_hand_case() -> None:
    # groups phys {alice: 1 (1n), 2 (2n); carol: 4 (4n)} vs chem {bob: 3}: groups 60/60 of 120;
    # in phys the users alice/carol 30/30; alice's jobs by size 10/20; carol's 4 alone 30
    a = allocate(
        Policy.from_name("group-user-size-fair"), {T1: INF, T2: INF, T3: INF, T4: INF}, 120
    )
    assert [a.jobs[j] for j in "1234"] == approx([10, 20, 60, 30])
    # chem's only job is idle at 12: phys gets 108, alice/carol 54 each, alice's split 18/36
    a = allocate(Policy.from_name("group-user-size-fair"), {T1: INF, T2: INF, T3: 12, T4: INF}, 120)
    assert [a.jobs[j] for j in "1234"] == approx([18, 36, 12, 54])


def test_weights_override() -> None:
    p = Policy.from_name("user-fair", user_weights={"bob": 3.0})
    a = allocate(p, {T1: INF, T3: INF}, 100)
    assert [a.jobs["1"], a.jobs["3"]] == approx([25, 75])


def test_fifo_is_reported_job_fair() -> None:
    a = allocate(Policy.from_name("fifo"), {T1: INF, T4: INF}, 10)
    assert [a.jobs["1"], a.jobs["4"]] == approx([5, 5])


def usage(tag: JobTag, node: str, nbytes: int, queued: int = 0, busy: bool = True) -> NodeUsage:
    return NodeUsage(tag, node, nbytes, nbytes // 4096, queued, 0.5, busy)


def test_multi_node_job_split_by_demand() -> None:
    # job 1 alone on A; job 2 on B and C (2 nodes); job-fair: 50/50 of 100
    rows = [usage(T1, "A", 30), usage(T2, "B", 20, 5), usage(T2, "C", 20, 5)]
    a = allocate_usage(Policy.from_name("job-fair"), rows, 100)
    assert a.nodes[("1", "A")] == pytest.approx(50)
    assert a.nodes[("2", "B")] == pytest.approx(25)
    assert a.nodes[("2", "C")] == pytest.approx(25)
    # on C the job is not backlogged and used 5 bytes in 0.5 s = 10/s: B gets the other 40
    rows[2] = usage(T2, "C", 5, 0, busy=False)
    a = allocate_usage(Policy.from_name("job-fair"), rows, 100)
    assert a.nodes[("2", "C")] == pytest.approx(10)
    assert a.nodes[("2", "B")] == pytest.approx(40)
    # both backlogged but B shows three times the demand (served + queued): split 3:1
    rows = [usage(T1, "A", 30), usage(T2, "B", 30, 30), usage(T2, "C", 10, 10)]
    a = allocate_usage(Policy.from_name("size-fair"), rows, 90)
    assert a.jobs["2"] == pytest.approx(60)
    assert (a.nodes[("2", "B")], a.nodes[("2", "C")]) == pytest.approx((45, 15))


def test_idle_job_on_one_node_frees_share_for_the_others() -> None:
    rows = [usage(T1, "A", 5, 0, busy=False), usage(T2, "B", 20, 5), usage(T3, "C", 20, 5)]
    a = allocate_usage(Policy.from_name("job-fair"), rows, 100)
    assert a.jobs["1"] == pytest.approx(10)
    assert a.jobs["2"] == pytest.approx(45)
    assert a.shares()["3"] == pytest.approx(0.45)


demand = st.one_of(st.just(INF), st.floats(0, 1e6))


@given(st.lists(st.tuples(st.floats(0.1, 10), demand), min_size=1, max_size=12), st.floats(0, 1e7))
def test_waterfill_properties(children: list[tuple[float, float]], budget: float) -> None:
    weights = [w for w, _ in children]
    demands = [d for _, d in children]
    out = waterfill(budget, weights, demands)
    assert math.fsum(out) == pytest.approx(budget, rel=1e-9, abs=1e-6)
    capped = [o for o, d in zip(out, demands) if o < d - 1e-6 * max(1.0, o)]
    # max-min: every child held below its demand is at the same level (per unit weight)
    levels = [o / w for o, w, d in zip(out, weights, demands) if o < d - 1e-6 * max(1.0, o)]
    if capped:
        assert max(levels) == pytest.approx(min(levels), rel=1e-6, abs=1e-6)
        # and nobody got more per weight than that level unless everything fits
        for o, w in zip(out, weights):
            assert o / w <= max(levels) * (1 + 1e-6) + 1e-6


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 8), demand),
        min_size=1,
        max_size=10,
    ),
    st.sampled_from(["job-fair", "size-fair", "user-fair", "group-user-size-fair"]),
)
def test_tree_allocation_uses_the_capacity(jobs: list[tuple[str, int, float]], name: str) -> None:
    demands = {JobTag(str(i), u, "g" + u, n): d for i, (u, n, d) in enumerate(jobs)}
    a = allocate(Policy.from_name(name), demands, 1000.0)
    assert math.fsum(a.jobs.values()) == pytest.approx(1000.0, rel=1e-9)
    for t, d in demands.items():
        assert a.jobs[t.job_id] >= 0
        if math.isinf(d) and all(math.isinf(x) for x in demands.values()):
            # all busy: the policy's own shares
            assert a.shares()[t.job_id] == pytest.approx(
                Policy.from_name(name).shares(demands)[t.job_id], rel=1e-9
            )
