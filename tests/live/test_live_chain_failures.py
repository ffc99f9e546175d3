"""Failed segments and cancellation on the real local Slurm cluster (about half a minute)."""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time

import pytest

from mirage.chain.cli import main as chain_main
from mirage.chain.reconcile import tagged_jobs
from mirage.chain.store import ChainStore
from mirage.chain.watcher import EXIT_CHAIN_FAILED, watch
from mirage.slurm import get_client

pytestmark = [pytest.mark.slurm]

FAST = ["--no-watch", "--decision-interval", "2", "--sample-interval", "2", "--window", "4",
        "--poll-interval", "1", "--min-interval", "0.5", "-t", "1", "-n", "1"]


def submit(state, script, *argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = chain_main(["--state-dir", str(state), "submit", str(script), *argv, *FAST])
    assert rc == 0, err.getvalue()
    return out.getvalue().split(":", 1)[0].split()[-1]


@pytest.fixture
def failing(tmp_path):
    p = tmp_path / "fail.sh"
    p.write_text("#!/bin/bash\necho $MIRAGE_SEGMENT >> " + str(tmp_path / "ran.log")
                 + "\nexit 3\n")
    return p


def test_failed_segment_stops_the_chain(slurm_cluster, tmp_path, failing):
    cid = submit(tmp_path, failing, "--segments", "3", "--policy", "reactive")
    assert watch(tmp_path, cid) == EXIT_CHAIN_FAILED
    store = ChainStore(tmp_path)
    c, segs = store.chain(cid), store.segments(cid)
    store.close()
    assert c.status == "failed" and "segment 0" in c.reason and "--keep-going" in c.reason
    assert [s.idx for s in segs] == [0] and segs[0].slurm_state == "FAILED"
    assert segs[0].exit_code == 3
    assert sorted(tagged_jobs(get_client(min_interval=0.0), cid)) == [0]


def test_keep_going_runs_every_segment(slurm_cluster, tmp_path, failing):
    cid = submit(tmp_path, failing, "--segments", "3", "--policy", "reactive", "--keep-going")
    assert watch(tmp_path, cid) == 0
    store = ChainStore(tmp_path)
    c, segs = store.chain(cid), store.segments(cid)
    store.close()
    assert c.status == "completed" and "3 segment(s) failed" in c.reason
    assert [s.idx for s in segs] == [0, 1, 2]
    assert all(s.how == "forced" for s in segs[1:])
    assert (tmp_path / "ran.log").read_text().split() == ["0", "1", "2"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert chain_main(["--state-dir", str(tmp_path), "list", "--json"]) == 0
    (row,) = json.loads(out.getvalue())
    assert (row["id"], row["status"], row["ended"], row["segments"]) == (cid, "completed", 3, 3)


def test_cancel_stops_jobs_and_watcher(slurm_cluster, tmp_path):
    script = tmp_path / "long.sh"
    script.write_text("#!/bin/bash\nsleep 55\n")
    cid = submit(tmp_path, script, "--segments", "2", "--policy", "reactive")
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(watch(tmp_path, cid)))
    t.start()
    client = get_client(min_interval=0.0)
    store = ChainStore(tmp_path)
    try:
        end = time.monotonic() + 60
        while store.segments(cid)[0].start is None:
            assert time.monotonic() < end, "segment 0 never started"
            time.sleep(1)
        assert chain_main(["--state-dir", str(tmp_path), "cancel", cid]) == 0
        t.join(60)
        assert result == [EXIT_CHAIN_FAILED]
        assert store.chain(cid).status == "cancelled"
        job = client.job(store.segments(cid)[0].job_id)
        end = time.monotonic() + 30  # with proctrack/cgroup the kill may take a moment
        while job is not None and job.state == "COMPLETING" and time.monotonic() < end:
            time.sleep(0.5)
            job = client.job(store.segments(cid)[0].job_id)
        assert job is not None and job.state.startswith("CANCELLED")
        assert len(store.segments(cid)) == 1
    finally:
        store.close()
        t.join(60)
