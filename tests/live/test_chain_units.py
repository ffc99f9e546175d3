"""Logic of the chain side without Slurm: the store, tags, reconciliation with a stand-in
client, the history's persistence, the config's errors and the metrics' gap split."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from hpcbase.config import ConfigError
from hpcbase.slurm import JobInfo
from hpcbase.snapshot import QueueSnapshot
from mirage import config
from mirage.chain import tags
from mirage.chain.reconcile import INTENT_GRACE, ReconcileError, reconcile
from mirage.chain.store import ENDED, INTENT, SUBMITTED, ChainStore
from mirage.live.history import QueueHistory
from mirage.metrics import Metrics


def job(jid: int, comment: str, state: str = "PENDING") -> JobInfo:
    return JobInfo(
        id=jid,
        name="x",
        user="u",
        state=state,
        nodes=1,
        cpus=1,
        time_limit=60,
        submit=100.0,
        eligible=100.0,
        start=None,
        end=None,
        comment=comment,
    )


class FakeSlurm:
    def __init__(self, jobs: list[JobInfo]) -> None:
        self.jobs = jobs
        self.cancelled: list[int] = []

    def recent_jobs(self, max_age: float | None = None) -> list[JobInfo]:
        return self.jobs

    def cancel(self, jid: int) -> None:
        self.cancelled.append(jid)


@pytest.fixture
def store(tmp_path):
    s = ChainStore(tmp_path)
    yield s
    s.close()


def new_chain(store: ChainStore):
    return store.create_chain(
        "/x.sh", "/", 3, "average", False, ["-t", "1"], "watcher", {"poll_interval": 2.0}
    )


def test_store_is_wal_and_refuses_a_second_intent(store):
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    c = new_chain(store)
    assert c.settings == {"poll_interval": 2.0} and c.sbatch_args == ["-t", "1"]
    store.record_intent(c.id, 0, "first", False)
    with pytest.raises(sqlite3.IntegrityError):
        store.record_intent(c.id, 0, "first", False)
    store.record_submitted(c.id, 0, 42)
    seg = store.segments(c.id)[0]
    assert (seg.status, seg.job_id) == (SUBMITTED, 42)


def test_tags_round_trip():
    assert tags.parse_comment(tags.comment("abcd1234", 7)) == ("abcd1234", 7)
    assert tags.parse_comment("mirage:zz:1") is None
    assert tags.parse_comment(None) is None


def test_reconcile_adopts_an_intent_whose_job_exists(store):
    c = new_chain(store)
    store.record_intent(c.id, 0, "first", False)
    slurm = FakeSlurm([job(7, tags.comment(c.id, 0)), job(9, tags.comment(c.id, 0))])
    out = reconcile(store, slurm, c.id, now=store.segments(c.id)[0].intent_at + 1)
    assert out.adopted == [0] and store.segments(c.id)[0].job_id == 7
    assert slurm.cancelled == [9]  # a duplicate is cancelled, the oldest kept


def test_reconcile_drops_a_fresh_intent_without_job(store):
    c = new_chain(store)
    store.record_intent(c.id, 0, "first", False)
    out = reconcile(
        store,
        FakeSlurm([job(5, "mirage:ffffffff:0")]),
        c.id,
        now=store.segments(c.id)[0].intent_at + 1,
    )
    assert out.dropped == [0] and store.segments(c.id) == []


def test_reconcile_refuses_to_guess_about_an_old_intent(store):
    c = new_chain(store)
    store.record_intent(c.id, 1, "policy", True)
    with pytest.raises(ReconcileError, match="segment 1"):
        reconcile(
            store, FakeSlurm([]), c.id, now=store.segments(c.id)[0].intent_at + INTENT_GRACE + 1
        )
    assert store.segments(c.id)[0].status == INTENT


def test_reconcile_cancels_unrecorded_tagged_jobs(store):
    c = new_chain(store)
    store.record_intent(c.id, 0, "first", False)
    store.record_submitted(c.id, 0, 3)
    store.update_segment(c.id, 0, status=ENDED)
    slurm = FakeSlurm([job(3, tags.comment(c.id, 0), "COMPLETED"), job(4, tags.comment(c.id, 1))])
    assert reconcile(store, slurm, c.id, now=1e12).cancelled == [4]


def snap(t: float, pend: int, run: int) -> QueueSnapshot:
    return QueueSnapshot.from_rows(
        t,
        16,
        [(100 + i, 1, 60.0, t - 30, t - 30) for i in range(pend)],
        [(200 + i, 1, 60.0, t - 10) for i in range(run)],
    )


def test_history_saves_atomically_and_restores(tmp_path):
    h = QueueHistory(window=4, sample_interval=5.0, path=tmp_path / "h.npz")
    for i in range(6):
        h.push(snap(1000.0 + 5 * i, pend=i, run=2), max_limit=3600.0)
    h.save()
    assert not list(tmp_path.glob("*.tmp"))
    g = QueueHistory(window=4, sample_interval=5.0, path=tmp_path / "h.npz")
    assert g.load() and g.samples == 6 and g.last_sample == h.last_sample
    assert np.array_equal(g.builder.state().rows, h.builder.state().rows)
    assert g.latest_features() == h.latest_features()
    other = QueueHistory(window=8, sample_interval=5.0, path=tmp_path / "h.npz")
    assert not other.load()  # another window: ignored, not mixed in


@pytest.mark.parametrize("version", [2, 3])
def test_history_of_a_previous_format_is_kept(tmp_path, version):
    """A version-2 file (before started jobs' units were kept) or version-3 file (before
    rows had run_remaining_work) loads: its rows are kept, run_work standing in for the new
    column (the same value here: every job has one unit), and a version-2 file's starts
    count for no chain size until they age out."""
    h = QueueHistory(window=4, sample_interval=5.0, path=tmp_path / "h.npz")
    for i in range(6):
        h.push(snap(1000.0 + 5 * i, pend=2 - i % 3, run=i), max_limit=3600.0)
    h.save()
    with np.load(tmp_path / "h.npz") as z:
        d = {k: z[k] for k in z.files if k != "start_units" or version > 2}
    assert d["start_time"].shape[0] > 0 and d["rows"][:, -1].any()
    d["rows"] = d["rows"][:, :-1]  # the rows as FEATURE_VERSION 4 wrote them
    np.savez(tmp_path / "h.npz", **{**d, "version": version})
    g = QueueHistory(window=4, sample_interval=5.0, path=tmp_path / "h.npz")
    assert g.load() and np.array_equal(g.builder.state().rows, h.builder.state().rows)
    assert np.isnan(g.builder.state().start_units).all() == (version == 2)
    np.savez(tmp_path / "h.npz", **{**d, "version": 1})
    assert not QueueHistory(window=4, sample_interval=5.0, path=tmp_path / "h.npz").load()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[history]\nwindow = 0\n", "history.window: must be > 0"),
        ("[history]\nwindow = 'x'\n", "history.window: expected an integer"),
        ("[http]\nport = 70000\n", "http.port"),
        ("[slurm]\nbogus = 1\n", "slurm.bogus: unknown key"),
        ("[nope]\n", "[nope]: unknown section"),
        ("[decisions]\ndecision_interval = 60.0\n", "decisions.decision_interval: must be at"),
        ("[decisions]\ndefault_policy = 'pg'\n", "decisions.default_policy"),
        ("[log]\nlevel = 'loud'\n", "log.level"),
        ("[http\n", "invalid TOML"),
    ],
)
def test_config_errors_name_the_field(text, needle):
    with pytest.raises(ConfigError) as e:
        config.parse(text, "/etc/mirage/mirage.toml")
    assert needle in str(e.value) and "/etc/mirage/mirage.toml" in str(e.value)


def test_example_config_is_valid():
    from pathlib import Path

    cfg = config.load(Path(__file__).resolve().parents[2] / "systemd" / "mirage.toml")
    assert cfg.history.window > 0
    assert replace(cfg, path="x").path == "x"


def test_metrics_split_gaps_into_interruption_and_overlap():
    m = Metrics(CollectorRegistry())
    m.observe_gap(12.0)
    m.observe_gap(-30.0)
    m.observe_gap(-5.0)
    r = m.registry
    assert r.get_sample_value("mirage_interruption_seconds_count") == 1
    assert r.get_sample_value("mirage_overlap_seconds_count") == 2
    assert r.get_sample_value("mirage_overlap_seconds_sum") == 35.0


class EstimatingSlurm:
    """Answers ``sbatch --test-only`` with a fixed start, or fails."""

    def __init__(self, start: float | None, fail: bool = False) -> None:
        self.start, self.fail, self.asked = start, fail, []

    def test_only(self, script, options=None):
        from hpcbase.slurm import SlurmError

        self.asked.append((str(script), list(options or [])))
        if self.fail:
            raise SlurmError("sbatch --test-only failed: boom")
        return self.start


def test_learned_policies_get_slurms_start_estimate(store):
    """A learned policy's chain state carries ``sbatch --test-only``'s answer (the
    start-estimate features the model was trained with); baselines do not ask."""
    from mirage.chain.driver import ChainDriver

    learned = store.create_chain(
        "/x.sh", "/w", 3, "default", False, ["-t", "1"], "watcher", {"poll_interval": 2.0}
    )
    slurm = EstimatingSlurm(1234.0)
    driver = ChainDriver(store, slurm, decider=None, decision_interval=600)
    assert driver._estimate_start(learned) == 1234.0
    assert slurm.asked == [("/x.sh", ["-t", "1", "--chdir=/w"])]
    assert np.isnan(driver._estimate_start(new_chain(store)))  # "average": not asked
    assert len(slurm.asked) == 1
    failing = ChainDriver(store, EstimatingSlurm(None, fail=True), None, decision_interval=600)
    assert np.isnan(failing._estimate_start(learned))
