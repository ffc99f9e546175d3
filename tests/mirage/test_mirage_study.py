"""``mirage study`` end to end on a small slice of the LS6 trace: data at two cluster sizes,
training, validation table, the MoE gate report and the test tables."""

from __future__ import annotations

import json

import pytest

from mirage import dataset as ds
from mirage.agents.common.model_io import read_meta
from mirage.study import main


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_study_end_to_end(trace_path, tmp_path):
    out = tmp_path / "study"
    argv = [
        "--trace",
        trace_path("ls6-a100.log"),
        "--total-units",
        "72",
        "--train-units",
        "72,80",
        "--train-range",
        "2022-12-20:2023-01-04",
        "--validation-range",
        "2023-01-05:2023-01-10",
        "--test-range",
        "2023-01-11:2023-01-16",
        "--agents",
        "moe-dqn,gap-regressor",
        "--seeds",
        "0,1",
        "--train-episodes",
        "3",
        "--validation-episodes",
        "3",
        "--test-episodes",
        "3",
        "--chain-sizes",
        "1",
        "--drop-features",
        "pend_wait_max",
        "--out",
        str(out),
    ]
    with pytest.raises(SystemExit):  # a name that is no queue feature: refused at once
        main([*argv[:-4], "--drop-features", "pend_age", "--out", str(out)])
    assert not out.exists()
    assert main(argv) == 0
    train = ds.load(out / "data" / "train.parquet")
    val = ds.load(out / "data" / "validation.parquet")
    assert train.meta["total_units"] == [72, 80] and train.episodes == 6
    assert val.meta["decision_interval"] == 600.0  # validation decides as the policies do
    choice = json.loads((out / "choice.json").read_text())
    assert choice["default"] == "moe-dqn"  # the learned baseline is never the default
    assert "| moe-dqn-s0 |" in (out / "moe-gate.md").read_text()
    readme = (out / "README.md").read_text()
    assert "## Validation" in readme and "## Test split at 72 units, 1-node chains" in readme
    # beside the validation and the test table: the simulator and its replay's fidelity
    line = (
        "Simulator: Slurm's defaults, priority by age, 72 nodes "
        "(no site profile: --total-units given)"
    )
    assert readme.count(line) == 2 and "Replay against the recorded schedule (" in readme
    summary = json.loads((out / "test-1node" / "summary.json").read_text())
    agents = {s["agent"] for s in summary["summary"] if s["level"] == "all"}
    assert {"reactive", "oracle", "moe-dqn-s0", "gap-regressor-s0"} <= agents
    # each agent's seed ensemble is built, tuned on validation and tested with the seeds;
    # the default ships its agent's best seed or its ensemble, whichever validation prefers
    assert {"moe-dqn-ens", "gap-regressor-ens"} <= agents
    assert set(choice["ensembles"]) == {"moe-dqn-ens", "gap-regressor-ens"}
    best = min(choice["models"][f"moe-dqn-s{s}"]["abs_gap"] for s in (0, 1))
    ens = choice["ensembles"]["moe-dqn-ens"]["abs_gap"]
    assert choice["default_model"] == (
        "moe-dqn-ens.zip" if ens < best else f"moe-dqn-s{choice['default_seed']}.zip"
    )
    assert "moe-dqn ensemble" in (out / "validation.md").read_text()
    # every model learned without the dropped feature, and the report says so
    assert read_meta(out / "models" / "moe-dqn-s1.zip")["dropped_features"] == ["pend_wait_max"]
    assert "learns without the queue features pend_wait_max" in readme
