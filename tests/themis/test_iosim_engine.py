"""The I/O simulator: microbenchmarks reproduce ThemisIO's qualitative results; model checks."""

from __future__ import annotations

import math

import pytest

from themis.iosim.engine import IOSim
from themis.iosim.metrics import alone_rates, analyze, busy_fractions
from themis.iosim.model import GiB, IOJob, IOProfile, MiB, ServerSpec
from themis.iosim.runs import RunSpec, run_scenario, server_load
from themis.iosim.workload import MICRO, STEADY
from themis.sched import JobTag, Policy

SERVERS = ServerSpec(count=2)


def shares(
    scenario: str, policy: str, dispatcher: str = "lottery", duration: float = 0.5, **kw
) -> dict[str, float]:
    sc = MICRO[scenario]()
    res = IOSim(list(sc.jobs), kw.pop("servers", SERVERS), policy, dispatcher, **kw).run(duration)
    m = analyze(res, Policy.from_name(policy))
    return {j.job_id: j.share for j in m.jobs}


@pytest.mark.parametrize(
    ("policy", "dispatcher", "small"),
    [
        ("size-fair", "lottery", 0.2),
        ("size-fair", "sfq", 0.2),
        ("job-fair", "lottery", 0.5),
        ("job-fair", "sfq", 0.5),
    ],
)
def test_size_microbenchmark_shares(policy, dispatcher, small):
    got = shares("size", policy, dispatcher)
    assert got["small"] == pytest.approx(small, abs=0.03)


def test_user_microbenchmark_user_fair_is_one_to_one_by_user():
    got = shares("user", "user-fair")
    assert got["bob-1"] == pytest.approx(0.5, abs=0.03)
    assert got["alice-1"] + got["alice-2"] == pytest.approx(0.5, abs=0.03)
    jf = shares("user", "job-fair")
    assert jf["bob-1"] == pytest.approx(1 / 3, abs=0.03)


def test_burst_themis_beats_tbf_throughput_and_fifo_variation():
    sc = MICRO["burst"]()
    specs = [RunSpec.parse(s) for s in ("fifo", "job-fair:tbf", "job-fair")]
    fifo, tbf, themis = run_scenario(
        "burst", sc.jobs, ServerSpec(count=2), specs, duration=1.0, with_alone=False
    )
    assert themis.throughput > tbf.throughput * 1.02
    assert themis.mean_cov < fifo.mean_cov
    assert themis.share_error < fifo.share_error


def test_global_sync_fixes_overlapping_server_sets():
    sync = shares("global", "job-fair", servers=ServerSpec(count=4), delta=0.01, duration=1.0)
    local = shares("global", "job-fair", servers=ServerSpec(count=4), delta=None, duration=1.0)
    assert abs(sync["wide"] - 0.5) < 0.02
    assert local["wide"] > 0.53  # without the exchange the wide job gets more


def test_runs_are_deterministic_given_the_seed():
    sc = MICRO["size"]()

    def once(seed):
        r = IOSim(list(sc.jobs), SERVERS, "size-fair", seed=seed).run(0.2)
        return r.chunks, [j.bytes for j in r.jobs]

    assert once(3) == once(3)
    assert once(3) != once(4)


def test_single_job_is_work_conserving_at_server_bandwidth():
    job = IOJob(JobTag("solo", "u", "g", 4), STEADY)
    spec = ServerSpec(count=2, bandwidth=1 * GiB, overhead=0.0, channels=4)
    r = IOSim([job], spec, "size-fair").run(1.0)
    assert r.jobs[0].bytes / 1.0 == pytest.approx(2 * GiB, rel=0.02)


def test_checkpoint_bursts_are_bulk_synchronous():
    prof = IOProfile(
        "checkpoint", req_bytes=1 * MiB, depth=2, procs_per_node=2, burst_bytes=8 * MiB, period=0.1
    )
    job = IOJob(JobTag("ck", "u", "g", 2), prof)  # 4 procs x 8 MiB = 32 MiB per burst
    spec = ServerSpec(count=1, bandwidth=1 * GiB, overhead=0.0, channels=1)
    r = IOSim([job], spec, "job-fair").run(1.0)
    bursts = r.jobs[0].bursts
    assert bursts[0][0] == pytest.approx(0.1)
    for s, e in bursts:
        assert e - s == pytest.approx(32 / 1024, rel=1e-6)  # 32 MiB at 1 GiB/s
    for (_, e), (s2, _) in zip(bursts, bursts[1:]):
        assert s2 - e == pytest.approx(0.1)  # compute between bursts
    assert len(bursts) * 32 * MiB <= r.jobs[0].bytes < (len(bursts) + 1) * 32 * MiB


def test_metadata_ops_cost_min_charge():
    meta = IOJob(
        JobTag("m", "u", "g", 1), IOProfile("metadata", depth=4, burst_ops=10**6, period=0.0)
    )
    data = IOJob(JobTag("d", "v", "g", 1), IOProfile("dataload", req_bytes=4096, depth=4))
    r = IOSim([meta, data], ServerSpec(count=1), "job-fair", "sfq").run(0.2)
    m, d = r.jobs
    assert m.bytes == 0 and m.ops > 0
    assert m.ops == pytest.approx(d.ops, rel=0.05)  # equal charge: 4096 per op either way


def test_jobs_start_and_end_and_are_forgotten():
    a = IOJob(JobTag("a", "u", "g", 1), STEADY, start=0.0, end=0.2)
    b = IOJob(JobTag("b", "v", "g", 1), STEADY, start=0.3)
    sim = IOSim([a, b], SERVERS, "job-fair")
    r = sim.run(0.5)
    wa, wb = r.jobs[0].window_work, r.jobs[1].window_work
    assert sum(wa[:4]) > 0 and sum(wa[5:]) == 0
    assert sum(wb[:6]) == 0 and sum(wb[6:]) > 0
    assert all("a" not in s.sched.stats().jobs for s in sim.servers)


def test_tbf_caps_each_job_in_the_simulator():
    job = IOJob(JobTag("solo", "u", "g", 4), STEADY)
    rate = 256 * MiB
    r = IOSim(
        [job], SERVERS, "job-fair", "tbf", dispatcher_options={"rate": rate, "burst": 4 * MiB}
    ).run(1.0)
    assert r.jobs[0].bytes <= 2 * (rate * 1.0 + 4 * MiB) + 2 * MiB
    assert r.jobs[0].bytes >= 2 * rate * 0.95


def test_gift_runs_in_the_simulator_near_its_fair_shares():
    sc = MICRO["size"]()
    r = IOSim(
        list(sc.jobs),
        SERVERS,
        "size-fair",
        "gift",
        dispatcher_options={"capacity": SERVERS.bandwidth},
    ).run(2.0)
    m = analyze(r, Policy.from_name("size-fair"))
    assert m.jobs[0].share == pytest.approx(0.2, abs=0.03)


def test_busy_fractions_hand_worked():
    got = busy_fractions([(0.0, 0.05), (0.15, 0.175)], 0.1, 3)
    assert got.tolist() == pytest.approx([0.5, 0.25, 0.0])
    assert busy_fractions([], 0.1, 2).tolist() == [0.0, 0.0]


def test_alone_rates_and_slowdown():
    sc = MICRO["size"]()
    alone = alone_rates(list(sc.jobs), SERVERS, 0.3)
    cap = 2 * SERVERS.bandwidth
    assert alone["large"] == pytest.approx(cap, rel=0.03)  # 64 outstanding: saturates
    assert 0.85 * cap < alone["small"] <= alone["large"]  # 16 outstanding, random servers
    r = IOSim(list(sc.jobs), SERVERS, "job-fair").run(0.3)
    m = analyze(r, Policy.from_name("job-fair"), alone=alone)
    assert all(j.slowdown == pytest.approx(2.0, rel=0.1) for j in m.jobs)


def test_run_spec_parsing_and_errors():
    assert RunSpec.parse("size-fair").label == "size-fair:lottery"
    assert RunSpec.parse("job-fair:sfq+nosync") == RunSpec("job-fair", "sfq", False)
    assert RunSpec.parse("fifo").dispatcher == "fifo"
    for bad, msg in (
        ("nope", "unknown policy"),
        ("job-fair:x", "unknown dispatcher"),
        ("job-fair+y", "unknown flag"),
    ):
        with pytest.raises(ValueError, match=msg):
            RunSpec.parse(bad)
    sc = MICRO["global"]()
    assert server_load(sc.jobs, ServerSpec(count=4), 1.0) == pytest.approx(1.75)
    assert math.isfinite(server_load([], ServerSpec(count=4), 1.0))
