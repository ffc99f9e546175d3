"""``mirage retrain`` on a generated log, and the live decision service picking up a model
replaced on disk without a restart."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from mirage.agents import default_model_path
from mirage.agents.common.model_io import read_meta, write_meta
from mirage.live.decisions import DecisionService, JournalEntry
from mirage.live.history import QueueHistory
from mirage.retrain import main
from tests.mirage.test_mirage_backtest import shifting_log

ARGS = [
    "--chains-per-week", "10", "--seeds", "0,1", "--epochs", "5", "--chain-units", "8",
    "--chain-limit-hours", "24", "--decision-interval", "3600", "--history-days", "28",
    "--no-progress",
]  # fmt: skip


def test_retrain_promotes_only_a_winner(tmp_path: Path) -> None:
    log, model, store = tmp_path / "acct.swf", tmp_path / "live" / "model.zip", tmp_path / "s"
    shifting_log(log)
    assert (
        main(["--accounting", str(log), "--model", str(model), "--store", str(store), *ARGS]) == 0
    )
    (run,) = (store / "runs").iterdir()
    first = json.loads((run / "report.json").read_text())
    # without a current model the candidate must beat reactive on the held-out week
    assert first["promoted"] == (first["candidate_abs_gap"] < first["reactive_abs_gap"])
    assert first["promoted"] and model.is_file()
    assert read_meta(model) == read_meta(run / first["candidate"])
    assert len(list((store / "models").iterdir())) == 1
    # the same accounting again: the same candidate (seeded), which does not beat itself
    assert (
        main(["--accounting", str(log), "--model", str(model), "--store", str(store), *ARGS]) == 0
    )
    second = max((store / "runs").iterdir())
    again = json.loads((second / "report.json").read_text())
    assert again["current_abs_gap"] == again["candidate_abs_gap"] == first["candidate_abs_gap"]
    assert not again["promoted"] and len(list((store / "models").iterdir())) == 1


def test_adaptation_retunes_the_deployed_models_rule(tmp_path: Path) -> None:
    """``--adapt-days``: after the comparison, the deployed model's threshold and guard are
    tuned again on the last days' chains (in sample: never worse there), and the model is
    replaced atomically and kept; the network itself is unchanged."""
    from mirage.agents.common.model_io import load_model

    log, model, store = tmp_path / "acct.swf", tmp_path / "live" / "model.zip", tmp_path / "s"
    shifting_log(log)
    common = ["--accounting", str(log), "--model", str(model), "--store", str(store), *ARGS]
    assert main(common) == 0 and model.is_file()  # the first candidate is deployed
    deployed = read_meta(model)
    assert main([*common, "--adapt-days", "14"]) == 0
    run = max((store / "runs").iterdir())
    adapted = json.loads((run / "report.json").read_text())["adapted"]
    assert adapted["chains"] >= 8, adapted
    assert adapted["after"]["abs_gap"] <= adapted["before"]["abs_gap"] + 1e-9
    assert "Adaptation: threshold" in (run / "report.md").read_text()
    meta = read_meta(model)
    if adapted["changed"]:
        assert meta["threshold"] == adapted["after"]["threshold"]
        assert meta["adapted"]["days"] == 14.0 and Path(adapted["kept_as"]).is_file()
        assert {k: v for k, v in meta.items() if k not in ("threshold", "guard", "adapted")} == {
            k: v for k, v in deployed.items() if k not in ("threshold", "guard")
        }
    else:
        assert meta == deployed
    assert load_model(model).threshold == meta["threshold"]


def test_a_replaced_model_is_loaded_at_the_next_decision(tmp_path: Path) -> None:
    path = tmp_path / "model.zip"
    shutil.copyfile(default_model_path(), path)
    service = DecisionService(QueueHistory(144, 600.0), 600.0, allowed={str(path)})
    old, _ = service.policy(str(path))
    assert service.policy(str(path))[0] is old  # cached while the file is unchanged
    meta = read_meta(path)
    write_meta(path, {**meta, "threshold": meta["threshold"] + 1.0}, out=tmp_path / "new.zip")
    os.replace(tmp_path / "new.zip", path)  # what mirage retrain's promotion does
    new, _ = service.policy(str(path))
    assert new is not old and new.threshold == old.threshold + 1.0
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    os.replace(tmp_path / "bad.zip", path)
    assert service.policy(str(path))[0] is new  # a broken replacement keeps the last good one


def test_each_decision_names_the_model_that_made_it(tmp_path: Path) -> None:
    """The decision inputs (the chain store's log) and the journal record the model file's
    identity; the audit replays the decisions of the model now on disk and counts those of a
    replaced one apart, not as mismatches."""
    from hpcbase.snapshot import QueueSnapshot
    from mirage.live.audit import audit
    from mirage.live.decisions import model_identity
    from mirage.observation import ChainState

    path = tmp_path / "model.zip"
    shutil.copyfile(default_model_path(), path)
    journal: list = []
    service = DecisionService(QueueHistory(144, 600.0), 600.0, journal=journal)
    old = model_identity(str(path))
    assert old.startswith("sha256:") and len(old) == 7 + 16
    assert model_identity("reactive") == "" and model_identity(str(tmp_path / "none.zip")) == ""
    t = 1.7e9
    chain = ChainState(t, 1, 86400.0, t - 7200.0, t - 3600.0, 1, 86400.0, float("nan"))
    assert service.decide(str(path), chain, 0).inputs["model"] == old  # before any sample
    for i in range(3):
        snap = QueueSnapshot.from_rows(t + 600.0 * i, 32, [], [(1, 4, 86400.0, t - 60.0)])
        service.history.push(snap, 48 * 3600.0)
        journal.append(JournalEntry("sample", snap))
    first = service.decide(str(path), chain, 0)
    meta = read_meta(path)
    write_meta(path, {**meta, "threshold": meta["threshold"] + 1.0}, out=tmp_path / "new.zip")
    os.replace(tmp_path / "new.zip", path)
    new = model_identity(str(path))
    second = service.decide(str(path), chain, 1)
    assert (first.inputs["model"], second.inputs["model"]) == (old, new) and old != new
    assert service.model(str(path)) == new
    assert [e.model for e in journal if e.kind == "decide"] == [old, new]
    result = audit(
        journal, max_limit=48 * 3600.0, window=144, sample_interval=600.0, decision_interval=600.0
    )
    assert (result.decisions, result.replaced, result.mismatches) == (2, 1, [])
    assert "model" not in DecisionService(QueueHistory(), 600.0).decide("reactive", chain, 0).inputs
