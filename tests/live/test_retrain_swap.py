"""``mirage retrain`` on the real local cluster's own jobcomp log, then the deployed model
swapped while a chain runs (issue 24), about 2 minutes.

1. A fresh one-node cluster (16 CPUs) runs a small contended load: 45 s of ``sleep`` jobs
   (1-4 CPUs, 1-4 s). Read at ``--time-scale 14400`` (one second here is four hours of the
   site's), its jobcomp log holds a week and a half of a site's load: enough for
   ``mirage retrain``'s smallest budget (one agent, one seed, one epoch, a day held out,
   six days of history, six chains a day).
2. ``mirage retrain`` (its CLI entry) reads that log into a model folder. Its report decides
   the assertions: promoted, or not promoted with the reason it gives. Without a current
   model the candidate must beat ``reactive``, which on such a log it usually only ties; the
   candidate is then deployed with retrain's own atomic promotion (:func:`mirage.retrain.
   promote`), as a later winning run would.
3. A chain of 3 segments (``mirage chain submit``, its background watcher deciding in
   process with the deployed model) runs; after the watcher's first decision, another model
   (the candidate with a rule that always submits) is promoted over it. The watcher logs the
   reload, every decision records the identity of the model that made it, those after the
   swap come from the new one (and act as it does), the chain keeps its segments and job ids,
   the watcher is never restarted, and the chain completes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from hpcbase.slurm import get_client
from hpcbase.slurm.localcluster import LocalCluster, missing_programs
from mirage.agents.common.model_io import read_meta, write_meta
from mirage.chain import paths
from mirage.chain.cli import main as chain_main
from mirage.chain.store import ACTIVE, COMPLETED, ChainStore
from mirage.cli import main as mirage_main
from mirage.live.decisions import model_identity
from mirage.retrain import promote
from sim.traces.read import read_trace

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(bool(missing_programs()), reason="needs Slurm and munge"),
]

K = 14400.0  # the cluster's clock against the site's
LOAD_S = 45.0  # the load's submissions span this long (7.5 site days)
RETRAIN = [
    "--unit", "procs", "--time-scale", f"{K:g}", "--agents", "gap-regressor", "--seeds", "0",
    "--epochs", "1", "--chains-per-week", "6", "--holdout-days", "1", "--history-days", "6",
    "--chain-units", "1", "--chain-limit-hours", "6", "--adapt-days", "7", "--no-progress",
]  # fmt: skip
SEGMENT_S = 20
WATCHER = [
    "--time-scale", f"{K:g}", "--decision-interval", "1", "--sample-interval", "1",
    "--poll-interval", "1", "--min-interval", "0.5",
]  # fmt: skip
DEADLINE = 150.0


@dataclass
class Retrained:
    cluster: LocalCluster
    tmp: Path
    model: Path
    store: Path
    run: Path
    report: dict
    stdout: str
    load_jobs: int
    wall: dict[str, float]


def wait_for(what: str, cond, timeout: float, every: float = 0.5) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


def run_load(cluster: LocalCluster, seed: int = 0) -> int:
    """Submit the load in real time; returns how many jobs, once all are in the jobcomp log."""
    client = get_client(conf=cluster.conf_path, min_interval=0.5)
    rng = np.random.default_rng(seed)
    offsets = np.sort(rng.uniform(0.0, LOAD_S, int(1.5 * LOAD_S)))
    offsets[0], offsets[-1] = 0.0, LOAD_S
    t0 = time.time()
    for off in offsets:
        time.sleep(max(0.0, t0 + off - time.time()))
        client.submit(
            f"sleep {rng.uniform(1.0, 4.0):.1f}",
            {"n": int(rng.integers(1, 5)), "time": 1, "J": "load", "output": "/dev/null"},
        )

    def logged() -> int:
        path = cluster.jobcomp_path
        return sum(1 for _ in path.open()) if path.exists() else 0

    wait_for("the load to end", lambda: logged() >= len(offsets), 90)
    return len(offsets)


@pytest.fixture(scope="module")
def retrained() -> Iterator[Retrained]:
    tmp = Path(tempfile.mkdtemp(prefix="mrt-", dir="/tmp"))  # short: Unix socket paths
    (tmp / "sched.conf").write_text("SchedulerParameters=bf_interval=5\n")
    cluster = LocalCluster(tmp / "c", cpus=16, conf_extra=tmp / "sched.conf", cgroups="no")
    wall: dict[str, float] = {}
    try:
        began = time.monotonic()
        cluster.start()
        n = run_load(cluster)
        wall["load_s"] = time.monotonic() - began
        model, store = tmp / "models" / "site.zip", tmp / "retrain"
        began = time.monotonic()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = mirage_main(
                ["retrain", "--accounting", str(cluster.jobcomp_path), "--model", str(model)]
                + ["--store", str(store), *RETRAIN]
            )
        wall["retrain_s"] = time.monotonic() - began
        assert rc == 0
        (run,) = (store / "runs").iterdir()
        report = json.loads((run / "report.json").read_text())
        yield Retrained(cluster, tmp, model, store, run, report, out.getvalue(), n, wall)
    finally:
        with contextlib.suppress(Exception):
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_retrain_reads_the_clusters_jobcomp_log(retrained: Retrained) -> None:
    r = retrained
    trace = read_trace(r.cluster.jobcomp_path, unit="procs")
    assert len(trace) == r.load_jobs  # the cluster's own log, every load job in it
    # a candidate and its report were written, the plan covers the log at the site's scale
    plan = json.loads((r.run / "plan.json").read_text())
    assert [w["role"] for w in plan["weeks"]][-1] == "test" and len(plan["weeks"]) >= 6
    # the cluster's size is the recorded schedule's peak use, not the largest job
    assert int(trace.units.max()) < plan["total_units"] <= 16
    assert (r.run / r.report["candidate"]).is_file()
    assert (r.run / "report.md").read_text() in r.stdout
    rep = r.report
    assert rep["train_chains"] > 0 and rep["validation_chains"] > 0
    assert rep["current"] is None  # nothing deployed yet
    # the simulator and its replay's fidelity against the recorded schedule, beside it
    sim = rep["simulator"]
    assert sim["fidelity"]["jobs"] == r.load_jobs
    assert "Replay against the recorded schedule (" in sim["line"]
    assert sim["line"] in r.stdout and sim["line"] in (r.run / "report.md").read_text()
    assert rep["promote"] == (rep["candidate_abs_gap"] < rep["reactive_abs_gap"])
    if rep["promoted"]:
        assert " < reactive (no current model) " in rep["reason"]
        # --adapt-days: the promoted model's rule is tuned again on the last days' chains
        # (where there are enough of them), kept beside the promoted one
        adapted = rep["adapted"]
        assert adapted["line"] in r.stdout and adapted["days"] == 7.0
        kept = sorted((r.store / "models").iterdir())
        assert Path(rep["kept_as"]) in kept
        deployed = r.run / rep["candidate"]
        if adapted["changed"]:
            deployed = Path(adapted["kept_as"])
            assert len(kept) == 2 and deployed in kept
        assert model_identity(str(r.model)) == model_identity(str(deployed))
    else:
        assert "is not below reactive (no current model)" in rep["reason"]
        assert f"not promoted, no model deployed ({rep['reason']})" in r.stdout
        assert not r.model.exists() and not (r.store / "models").exists()


def always_submits(candidate: Path, out: Path) -> Path:
    """The candidate with a rule that submits at every decision (no threshold to reach,
    no guard, no training support to stay inside): another model, told apart by its acts."""
    meta = read_meta(candidate)
    meta.update(threshold=-1e30, guard=None, support=None)
    meta.pop("decide_within", None)
    return write_meta(candidate, meta, out=out)


def test_model_swapped_while_a_chain_runs(
    retrained: Retrained, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = retrained
    began = time.monotonic()
    if not r.report["promoted"]:  # deploy the candidate the way a winning retrain does
        promote(r.run / r.report["candidate"], r.model, r.store, "deploy")
    old_id = model_identity(str(r.model))
    new = always_submits(r.run / r.report["candidate"], r.tmp / "always.zip")
    new_id = model_identity(str(new))
    assert old_id and new_id and old_id != new_id

    for key, value in r.cluster.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(r.tmp)
    state = r.tmp / "state"
    monkeypatch.setenv("MIRAGE_STATE_DIR", str(state))
    script = r.tmp / "segment.sh"
    script.write_text(f"#!/bin/sh\nsleep {SEGMENT_S}\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = chain_main(
            ["submit", str(script), "--segments", "3", "--policy", str(r.model), *WATCHER]
            + ["-t", "1", "-n", "1", "-o", "/dev/null"]
        )
    assert rc == 0, out.getvalue()
    cid = out.getvalue().split(":", 1)[0].split()[-1]
    store = ChainStore(state)
    lock = paths.chain_dir(state, cid) / "watcher.lock"
    watcher_pid = 0
    try:
        wait_for("the watcher's first decision", lambda: bool(store.decisions(cid)), 60, every=0.2)
        watcher_pid = int(lock.read_text().split()[0])
        before = {s.idx: s.job_id for s in store.segments(cid)}
        t0 = time.time()
        promote(new, r.model, r.store, "swap")  # what a winning retrain does
        t1 = time.time()
        wait_for("the chain to end", lambda: store.chain(cid).status != ACTIVE, DEADLINE)
        chain = store.chain(cid)
        segs = store.segments(cid)
        decisions = store.decisions(cid)
    finally:
        if store.chain(cid).status == ACTIVE:
            chain_main(["cancel", cid])
        store.close()
        if watcher_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(watcher_pid, 15)
    wall = time.monotonic() - began
    print(f"\nretrain: {r.report['reason']}; promoted: {r.report['promoted']}")
    print(f"wall: load {r.wall['load_s']:.0f} s, retrain {r.wall['retrain_s']:.0f} s, "
          f"chain {wall:.0f} s")  # fmt: skip

    # the chain completed all its segments; those of before the swap kept their job ids
    assert chain.status == COMPLETED, (chain.reason, store_events(state, cid))
    assert [s.idx for s in segs] == [0, 1, 2]
    assert all(s.slurm_state == "COMPLETED" for s in segs), segs
    assert len({s.job_id for s in segs}) == 3
    assert all(segs[i].job_id == jid for i, jid in before.items())
    recorded = read_trace(r.cluster.jobcomp_path, unit="procs")
    assert {s.job_id for s in segs} <= set(recorded.job_id.tolist())

    # every decision names its model; the old one decided before the swap, the new after
    models = [d["inputs"].get("model") for d in decisions]
    assert set(models) <= {old_id, new_id}, models
    assert models[0] == old_id and models[-1] == new_id
    assert models == sorted(models, key=lambda m: m == new_id)  # never back to the old one
    assert all(d["inputs"]["model"] == old_id for d in decisions if d["time"] < t0)
    after = [d for d in decisions if d["time"] > t1 + 0.5]
    assert after and all(d["inputs"]["model"] == new_id for d in after)
    assert all(d["action"] == "submit" for d in after if "note" not in d["inputs"])
    # a successor decided by the new model went in at its word, its predecessor running
    assert any(s.how == "policy" and s.prev_running for s in segs[1:]), segs

    # the watcher logged the reload, and is the one process that drove the chain throughout
    log = (paths.chain_dir(state, cid) / "watcher.log").read_text()
    assert f"loaded the new one ({new_id}, was {old_id})" in log, log
    assert len(re.findall(rf"watching chain {cid} \(pid {watcher_pid}\)", log)) == 1, log
    assert log.count("watching chain") == 1, log
    status = io.StringIO()
    with contextlib.redirect_stdout(status):
        assert chain_main(["status", cid]) == 0
    assert f"by {r.model.name} [{new_id}] for segment 2" in status.getvalue()


def store_events(state: Path, cid: str) -> list[str]:
    store = ChainStore(state)
    try:
        return [what for _, what in store.events(cid)]
    finally:
        store.close()
