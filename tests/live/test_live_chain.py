"""Chains on the real local Slurm cluster, under a contended background load.

One module-scoped run drives three chains at once (about two and a half minutes):

* A: 3 segments driven by agentd (a real daemon process, metrics scraped over HTTP);
* B: 3 segments driven by a user watcher that is SIGKILLed mid-chain and restarted;
* C: 1 segment submitted while slurmctld is stopped, its watcher started after the restart.

Segments sleep 40 s under a 1-minute limit (Slurm's least): the ``average`` policy, deciding
from the live queue history that the background load fills with waits of about 30-40 s,
pre-submits once 20-30 s are left of the limit, 10-20 s before the predecessor ends.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hpcbase.netutil import free_port
from hpcbase.slurm import get_client
from mirage.chain.cli import main as chain_main
from mirage.chain.reconcile import tagged_jobs
from mirage.chain.store import ACTIVE, ChainStore

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SEGMENT = """#!/bin/bash
echo "$MIRAGE_CHAIN_ID $MIRAGE_SEGMENT $SLURM_JOB_ID prev=$MIRAGE_PREV_JOBID \
running=$MIRAGE_PREV_RUNNING" >> {log}
sleep 40
"""
FAST = [
    "--decision-interval",
    "5",
    "--sample-interval",
    "5",
    "--window",
    "12",
    "--poll-interval",
    "2",
    "--min-interval",
    "1",
]
SBATCH = ["-t", "1", "-n", "1"]
DEADLINE = 420.0


def submit(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = chain_main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def chain_id_of(stdout: str) -> str:
    return stdout.split(":", 1)[0].split()[-1]


def watcher(state: Path, cid: str) -> subprocess.Popen:
    env = {**os.environ, "MIRAGE_STATE_DIR": str(state)}
    log = open(state / f"watcher-{cid}.log", "ab")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(
        [sys.executable, "-m", "mirage.chain.cli", "watch", cid],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )


def wait_for(what: str, cond, timeout: float = DEADLINE) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(1.0)


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


@pytest.fixture(scope="module")
def live(slurm_cluster, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("live")
    state, agentd_dir = tmp / "state", tmp / "agentd"
    state.mkdir()
    seg_log = tmp / "segments.log"
    script = tmp / "segment.sh"
    script.write_text(SEGMENT.format(log=seg_log))
    port = free_port()
    cfg = tmp / "mirage.toml"
    cfg.write_text(f"""
[slurm]
min_interval = 1.0
retry_attempts = 2
retry_timeout = 3.0
[history]
state_dir = "{agentd_dir}"
sample_interval = 5.0
window = 12
[decisions]
decision_interval = 5.0
default_policy = "average"
policies = ["average", "reactive", "dependency"]
[http]
port = {port}
[chains]
state_dirs = ["{state}"]
poll_interval = 2.0
""")
    base = f"http://127.0.0.1:{port}"
    old_state = os.environ.get("MIRAGE_STATE_DIR")
    os.environ["MIRAGE_STATE_DIR"] = str(state)
    old_cwd = os.getcwd()
    os.chdir(tmp)
    client = get_client(min_interval=1.0)
    procs: list[subprocess.Popen] = []
    load: list[int] = []
    daemon: subprocess.Popen | None = None
    out: dict = {"tmp": tmp, "state": state, "seg_log": seg_log, "base": base}
    try:
        # contended background load: 16 CPUs busy for 40 s, 12 more jobs waiting behind them;
        # the history starts once the first 16 run, so it records the 12 waits of ~40 s
        for _ in range(28):
            load.append(
                client.submit(
                    "sleep 40", {"n": 1, "time": "1:00", "J": "mirage-load", "output": "/dev/null"}
                )
            )
        wait_for(
            "the load to start",
            lambda: sum(j.running for j in client.queue(max_age=1.0) if j.id in load) == 16,
            60,
        )
        daemon = subprocess.Popen(
            [sys.executable, "-m", "mirage.agentd", "--config", str(cfg)],
            stdout=open(tmp / "agentd.log", "ab"),  # noqa: SIM115 (the daemon keeps it)
            stderr=subprocess.STDOUT,
        )  # noqa: SIM115
        procs.append(daemon)
        wait_for("agentd's first sample", lambda: http_get(base + "/healthz")[0] == 200, 60)
        rc, so, se = submit(
            "submit",
            str(script),
            "--segments",
            "3",
            "--policy",
            "average",
            "--driver",
            "agentd",
            *SBATCH,
        )
        assert rc == 0, se
        a = chain_id_of(so)
        rc, so, se = submit(
            "submit",
            str(script),
            "--segments",
            "3",
            "--policy",
            "average",
            "--no-watch",
            *FAST,
            *SBATCH,
        )
        assert rc == 0, se
        b = chain_id_of(so)
        wb = watcher(state, b)
        procs.append(wb)
        store = ChainStore(state)

        def segs(cid: str) -> int:
            return len(store.segments(cid))

        # B: SIGKILL its watcher once segment 1 has been submitted, restart it
        wait_for("chain B's segment 1", lambda: segs(b) >= 2)
        wb.send_signal(signal.SIGKILL)
        wb.wait(30)
        out["killed_at_segments"] = segs(b)
        time.sleep(4)
        procs.append(watcher(state, b))
        daemon.send_signal(signal.SIGHUP)  # reload the (unchanged) configuration mid-chain
        # slurmctld stopped while A's last segment is in Slurm: submit C meanwhile
        wait_for("chain A's segment 2", lambda: segs(a) >= 3)
        slurm_cluster.stop_slurmctld()
        try:
            out["outage_submit"] = submit(
                "submit",
                str(script),
                "--segments",
                "1",
                "--policy",
                "average",
                "--no-watch",
                *FAST,
                "--retry-attempts",
                "1",
                "--retry-timeout",
                "3",
                *SBATCH,
            )
            out["outage_status"] = submit("status", a)
            time.sleep(8)
        finally:
            slurm_cluster.start()
        c = chain_id_of(out["outage_submit"][1])
        procs.append(watcher(state, c))
        wait_for(
            "all chains to end", lambda: all(store.chain(x).status != ACTIVE for x in (a, b, c))
        )
        time.sleep(3)  # agentd's next loop updates the gauges
        out["metrics"] = http_get(base + "/metrics")
        out["health"] = http_get(base + "/healthz")
        daemon.send_signal(signal.SIGTERM)
        out["agentd_rc"] = daemon.wait(30)
        fresh = get_client(min_interval=0.0)
        for name, cid in (("a", a), ("b", b), ("c", c)):
            out[name] = {
                "id": cid,
                "chain": store.chain(cid),
                "segments": store.segments(cid),
                "decisions": store.decisions(cid),
                "tagged": tagged_jobs(fresh, cid),
            }
        store.close()
        out["history_saved"] = (agentd_dir / "history.npz").exists()
        yield out
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(30)
        with contextlib.suppress(Exception):
            for jid in load:
                client.cancel(jid)
        os.chdir(old_cwd)
        if old_state is None:
            os.environ.pop("MIRAGE_STATE_DIR", None)
        else:
            os.environ["MIRAGE_STATE_DIR"] = old_state


def ran(live, cid: str) -> list[list[str]]:
    lines = live["seg_log"].read_text().splitlines() if live["seg_log"].exists() else []
    return [ln.split() for ln in lines if ln.startswith(cid + " ")]


def test_chain_completes_with_each_successor_presubmitted(live):
    a = live["a"]
    assert a["chain"].status == "completed", a["chain"].reason
    segs = a["segments"]
    assert [s.idx for s in segs] == [0, 1, 2]
    for prev, seg in zip(segs, segs[1:]):
        assert seg.how == "policy", f"segment {seg.idx} was {seg.how}, not pre-submitted"
        assert seg.prev_running and seg.submitted_at < prev.end_time
        assert seg.gap is not None
    submits = [d for d in a["decisions"] if d["action"] == "submit"]
    assert [d["segment"] for d in submits] == [1, 2]
    for d in a["decisions"]:
        assert d["policy"] == "average"
        assert {"pred_remaining_s", "recent_waits_n", "queue"} <= set(d["inputs"]) or d[
            "inputs"
        ].get("note")
    assert all(
        d["inputs"]["recent_waits_mean_s"] >= d["inputs"]["pred_remaining_s"] for d in submits
    )
    rows = ran(live, a["id"])
    assert [r[1] for r in rows] == ["0", "1", "2"]
    assert rows[1][4] == "running=1" and rows[1][3] == f"prev={segs[0].job_id}"
    marker = live["state"] / "chains" / a["id"] / "segment-0.done"
    assert marker.read_text().split()[0] == str(segs[0].job_id)


def test_watcher_killed_and_restarted_neither_duplicates_nor_skips(live):
    b = live["b"]
    assert live["killed_at_segments"] >= 2
    assert b["chain"].status == "completed", b["chain"].reason
    assert [s.idx for s in b["segments"]] == [0, 1, 2]
    assert sorted(b["tagged"]) == [0, 1, 2]
    assert all(len(jobs) == 1 for jobs in b["tagged"].values()), b["tagged"]
    assert {s.job_id for s in b["segments"]} == {j[0].id for j in b["tagged"].values()}
    assert sorted(r[1] for r in ran(live, b["id"])) == ["0", "1", "2"]


def test_metrics_over_http_reflect_the_chain(live):
    code, text = live["metrics"]
    assert code == 200
    values = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            values[(s.name, tuple(sorted(s.labels.items())))] = s.value
    a = live["a"]
    gaps = [s.gap for s in a["segments"] if s.gap is not None]
    assert values[("mirage_submissions_total", (("how", "policy"),))] == 2
    assert values[("mirage_decisions_total", (("action", "submit"), ("policy", "average")))] == 2
    n_wait = sum(1 for d in a["decisions"] if d["action"] == "wait")
    assert (
        values.get(("mirage_decisions_total", (("action", "wait"), ("policy", "average"))), 0)
        == n_wait
    )
    assert values[("mirage_interruption_seconds_count", ())] == sum(g >= 0 for g in gaps)
    assert values[("mirage_overlap_seconds_count", ())] == sum(g < 0 for g in gaps)
    assert values[("mirage_overlap_seconds_sum", ())] == pytest.approx(
        sum(-g for g in gaps if g < 0)
    )
    assert values[("mirage_active_chains", ())] == 0
    assert values[("mirage_config_reloads_total", (("result", "ok"),))] == 1
    assert values[("mirage_chains_finished_total", (("status", "completed"),))] == 1
    assert values[("mirage_queue_samples_total", ())] > 10
    assert values[("mirage_slurm_query_seconds_count", (("command", "squeue"),))] > 0
    assert values[("mirage_slurm_errors_total", (("command", "squeue"),))] > 0  # the outage
    assert live["health"][0] == 200 and json.loads(live["health"][1])["status"] == "ok"
    assert live["agentd_rc"] == 0 and live["history_saved"]


def test_slurmctld_stopped_mid_chain_loses_nothing(live):
    rc, so, se = live["outage_submit"]
    assert rc == 0 and "Slurm is unavailable" in se and "recorded" in se
    assert "Traceback" not in se
    assert live["outage_status"][0] == 0  # the store answers without Slurm
    c = live["c"]
    assert c["chain"].status == "completed", c["chain"].reason
    assert [s.idx for s in c["segments"]] == [0]
    assert len(c["tagged"][0]) == 1 and c["segments"][0].job_id == c["tagged"][0][0].id
    assert [r[1] for r in ran(live, c["id"])] == ["0"]
    for x in ("a", "b"):  # the chains running through the outage completed too
        assert live[x]["chain"].status == "completed"
