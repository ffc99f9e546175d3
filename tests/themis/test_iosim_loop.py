"""The simulator's C event loop (themis/sched/_simloop.c) against its Python reference
(IOSim(reference=True): the Python loop over the reference schedulers): same results."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from themis.iosim.engine import IOSim
from themis.iosim.model import IOJob, IOProfile, KiB, MiB, ServerSpec
from themis.iosim.workload import mix_from_rows, synthetic_rows
from themis.sched import JobTag

DISPATCH: dict[str, dict[str, float]] = {
    "lottery": {},
    "sfq": {},
    "fifo": {},
    "tbf": {"rate": 200 * MiB},
    "gift": {"capacity": 1024 * MiB},
}


def same(jobs, servers, policy, dispatcher, seed, delta, duration) -> None:
    """Run the reference and the C loop on the same input; assert the same results."""
    ra, rb = (
        IOSim(
            jobs,
            servers,
            policy,
            dispatcher,
            seed=seed,
            delta=delta,
            dispatcher_options=DISPATCH[dispatcher],
            reference=reference,
        ).run(duration)
        for reference in (True, False)
    )
    assert (ra.chunks, ra.events) == (rb.chunks, rb.events)
    for ja, jb in zip(ra.jobs, rb.jobs, strict=True):
        assert (ja.bytes, ja.ops, ja.work, ja.window_work) == (
            jb.bytes,
            jb.ops,
            jb.work,
            jb.window_work,
        )
        assert ja.busy == jb.busy and ja.bursts == jb.bursts


@pytest.mark.parametrize("dispatcher", sorted(DISPATCH))
@pytest.mark.parametrize("policy", ["size-fair", "user-fair", "group-user-size-fair"])
def test_the_synthetic_mix_gives_the_same_results(policy, dispatcher):
    jobs = mix_from_rows(synthetic_rows(60, seed=3), seed=3)
    servers = ServerSpec(8, 2 * 1024 * MiB, 20e-6, 4)
    same(jobs, servers, policy, dispatcher, 5, 0.01, 0.05)


profiles = st.builds(
    IOProfile,
    kind=st.sampled_from(["checkpoint", "dataload", "metadata"]),
    req_bytes=st.sampled_from([4 * KiB, 256 * KiB, 1 * MiB, 3 * MiB]),
    depth=st.integers(1, 4),
    procs_per_node=st.integers(1, 3),
    burst_bytes=st.sampled_from([1 * MiB, 8 * MiB]),
    burst_ops=st.integers(1, 40),
    period=st.sampled_from([0.0, 0.002, 0.01]),
    think=st.sampled_from([0.0, 0.0, 1e-4]),
    stripe_count=st.integers(0, 3),
)
sim_jobs = st.builds(
    lambda i, nodes, prof, start, length, servers: IOJob(
        JobTag(f"j{i}", f"u{i % 3}", f"g{i % 2}", nodes),
        prof,
        start,
        math.inf if length is None else start + length,
        servers,
    ),
    st.integers(0, 10**6),
    st.integers(1, 4),
    profiles,
    st.sampled_from([0.0, 0.0, 0.003, 0.01]),
    st.sampled_from([None, 0.005, 0.02]),
    st.one_of(st.none(), st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple)),
)


@settings(max_examples=60, deadline=None)
@given(
    jobs=st.lists(sim_jobs, min_size=1, max_size=8, unique_by=lambda j: j.tag.job_id),
    policy=st.sampled_from(["size-fair", "job-fair", "user-then-size-fair", "fifo"]),
    dispatcher=st.sampled_from(sorted(DISPATCH)),
    channels=st.integers(1, 4),
    count=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_random_jobs_give_the_same_results(jobs, policy, dispatcher, channels, count, seed):
    servers = ServerSpec(count, 512 * MiB, 20e-6, channels)
    same(jobs, servers, policy, dispatcher, seed, 0.005, 0.03)
