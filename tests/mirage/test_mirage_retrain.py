"""``mirage retrain`` on a generated log, and the live decision service picking up a model
replaced on disk without a restart."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from mirage.agents import default_model_path
from mirage.agents.common.model_io import read_meta, write_meta
from mirage.live.decisions import DecisionService
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
