"""Metrics: per-job series, shares from the scheduler, TTL expiry, a real HTTP scrape."""

from __future__ import annotations

import urllib.request

from prometheus_client import CollectorRegistry

from hpcbase.netutil import free_port
from themis.metrics import ThemisMetrics
from themis.sched import JobTag, Scheduler


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_records_shares_and_expires_finished_jobs():
    clock = Clock()
    m = ThemisMetrics(CollectorRegistry(), job_ttl=60, clock=clock)
    a, b = JobTag("1", "alice", "phys", 1), JobTag("2", "bob", "chem", 4)
    m.file_opened(a)
    m.file_opened(b)
    m.record(a, "write", 100)
    m.record(b, "read", 400)
    sched = Scheduler("size-fair", "lottery", max_inflight=1)
    for tag in (a, b):
        sched.submit(tag, 1 << 20)
    m.update(sched.stats())
    r = m.registry
    assert (
        r.get_sample_value(
            "themis_io_bytes_total",
            {"slurm_job": "1", "user": "alice", "group": "phys", "op": "write"},
        )
        == 100
    )
    assert (
        r.get_sample_value(
            "themis_job_target_share_ratio", {"slurm_job": "2", "user": "bob", "group": "chem"}
        )
        == 0.8
    )
    assert r.get_sample_value("themis_queue_depth") == 2  # nothing dispatched yet
    sched.next()
    m.update(sched.stats())
    assert r.get_sample_value("themis_queue_depth") == 1
    assert r.get_sample_value("themis_inflight_chunks") == 1
    m.file_closed(a)
    clock.now = 30
    assert m.expire() == []
    clock.now = 100
    assert m.expire() == ["1"]  # b still has a file open
    assert (
        r.get_sample_value(
            "themis_io_bytes_total",
            {"slurm_job": "1", "user": "alice", "group": "phys", "op": "write"},
        )
        is None
    )
    assert r.get_sample_value("themis_jobs") == 1
    assert r.get_sample_value("themis_jobs_expired_total") == 1


def test_scrape_over_http():
    m = ThemisMetrics(CollectorRegistry())
    m.record(JobTag("7", "u", "g"), "write", 5)
    port = free_port()
    stop = m.serve(port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    finally:
        stop()
    assert 'themis_io_bytes_total{group="g",op="write",slurm_job="7",user="u"} 5.0' in text
    assert all(line.startswith(("#", "themis_")) for line in text.splitlines() if line)
