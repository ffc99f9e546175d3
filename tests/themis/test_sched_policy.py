"""Policies' target shares on hand-worked cases, and policy files."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from themis.sched import POLICIES, JobTag, Policy, PolicyError, load_policy


def T(job: str, user: str = "u", group: str = "g", nodes: int = 1) -> JobTag:
    return JobTag(job, user, group, nodes)


def approx(d: dict[str, float]) -> dict[str, object]:
    return {k: pytest.approx(v) for k, v in d.items()}


def test_size_fair_one_node_vs_four_nodes_is_1_to_4():
    shares = Policy.from_name("size-fair").shares([T("a", nodes=1), T("b", nodes=4)])
    assert shares == approx({"a": 0.2, "b": 0.8})


def test_job_fair_is_equal_per_job():
    shares = Policy.from_name("job-fair").shares([T("a", nodes=1), T("b", nodes=4)])
    assert shares == approx({"a": 0.5, "b": 0.5})


def test_user_fair_splits_per_user_then_per_job():
    tags = [T("a1", "u1"), T("a2", "u1", nodes=8), T("b", "u2")]
    shares = Policy.from_name("user-fair").shares(tags)
    assert shares == approx({"a1": 0.25, "a2": 0.25, "b": 0.5})


def test_user_then_size_fair_splits_users_equally_then_by_nodes():
    tags = [T("a1", "u1", nodes=1), T("a2", "u1", nodes=3), T("b", "u2", nodes=2)]
    shares = Policy.from_name("user-then-size-fair").shares(tags)
    assert shares == approx({"a1": 0.125, "a2": 0.375, "b": 0.5})


def test_group_user_size_fair_nests_three_levels():
    tags = [
        T("a", "u1", "g1", 1),
        T("b", "u1", "g1", 3),
        T("c", "u2", "g1", 1),
        T("d", "u3", "g2", 8),
    ]
    shares = Policy.from_name("group-user-size-fair").shares(tags)
    assert shares == approx({"a": 0.0625, "b": 0.1875, "c": 0.25, "d": 0.5})


def test_fifo_reports_an_equal_split():
    assert Policy.from_name("fifo").shares([T("a"), T("b", nodes=3)]) == approx(
        {"a": 0.5, "b": 0.5}
    )
    assert Policy.from_name("fifo").fifo and not Policy.from_name("job-fair").fifo


def test_weight_overrides_apply_at_the_user_level_or_to_jobs():
    tags = [T("a1", "alice"), T("a2", "alice"), T("b", "bob")]
    uf = Policy.from_name("user-fair", user_weights={"alice": 2.0})
    assert uf.shares(tags) == approx({"a1": 1 / 3, "a2": 1 / 3, "b": 1 / 3})
    jf = Policy.from_name("job-fair", user_weights={"alice": 2.0})  # no user level: per job
    assert jf.shares(tags) == approx({"a1": 0.4, "a2": 0.4, "b": 0.2})


def test_tree_shares_and_paths():
    p = Policy.from_name("group-user-size-fair")
    tag = T("a", "u1", "g1", 2)
    assert p.path(tag) == ("g:g1", "u:u1", "j:a")
    tree = p.tree_shares([tag, T("b", "u2", "g2", 1)])
    assert tree[("g:g1",)] == pytest.approx(0.5)
    assert tree[("g:g1", "u:u1", "j:a")] == pytest.approx(0.5)


def test_empty_and_duplicate_active_sets():
    p = Policy.from_name("size-fair")
    assert p.shares([]) == {}
    assert p.shares([T("a"), T("a")]) == approx({"a": 1.0})


tags_st = st.lists(
    st.builds(
        JobTag,
        st.text("abcdef", min_size=1, max_size=3),
        st.sampled_from("uvw"),
        st.sampled_from("gh"),
        st.integers(1, 64),
    ),
    min_size=1,
    max_size=20,
)


@given(tags_st, st.sampled_from(sorted(POLICIES)))
def test_shares_sum_to_one_and_are_positive(tags, name):
    shares = Policy.from_name(name).shares(tags)
    assert set(shares) == {t.job_id for t in tags}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert all(s > 0 for s in shares.values())


def test_load_policy_from_file_and_mapping(tmp_path):
    path = tmp_path / "themis.toml"
    path.write_text(
        'policy = "user-fair"\n[weights.users]\nalice = 2\n[weights.groups]\nhpc = 0.5\n'
    )
    p = load_policy(path)
    assert p.name == "user-fair" and p.user_weights["alice"] == 2.0
    assert p.group_weights["hpc"] == 0.5
    assert load_policy({"policy": "size-fair"}).leaf == "nodes"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('policy = "nope"', "field 'policy': unknown policy 'nope'"),
        ("policy = 3", "field 'policy' must be a string"),
        ('policy = "job-fair"\ncolour = 1', "unknown key(s) ['colour']"),
        ('policy = "job-fair"\n[weights.users]\nbob = -1', "field 'weights.users.bob' must be"),
        ('policy = "job-fair"\n[weights]\npets = {}', "unknown key(s) in 'weights'"),
        ('policy = "job-fair"\nweights = 2', "field 'weights' must be a table"),
        ("policy = = 1", "invalid TOML"),
    ],
)
def test_bad_policy_files_name_the_file_and_field(tmp_path, text, needle):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    assert str(path) in str(err.value) and needle in str(err.value)


def test_missing_file_and_unknown_name():
    with pytest.raises(PolicyError, match="cannot read policy file"):
        load_policy("/nonexistent/themis.toml")
    with pytest.raises(PolicyError, match="unknown policy 'x'"):
        Policy.from_name("x")
    with pytest.raises(ValueError, match="nodes must be"):
        JobTag("a", "u", "g", 0)
