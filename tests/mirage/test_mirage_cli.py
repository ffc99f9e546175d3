"""`mirage train` and `mirage eval` end to end on a small real trace."""

from __future__ import annotations

import json

import pytest

from mirage.cli import main as mirage


@pytest.mark.slow
def test_train_then_eval(tmp_path, capsys, hpc2n_path):
    trace = hpc2n_path
    model = tmp_path / "pg.zip"
    assert (
        mirage(
            [
                "train",
                "--trace",
                trace,
                "--agent",
                "pg",
                "--steps",
                "64",
                "--seed",
                "1",
                "--out",
                str(model),
                "--no-progress",
            ]
        )
        == 0
    )
    assert model.exists() and (tmp_path / "pg.logs" / "progress.csv").exists()
    out = tmp_path / "res"
    rc = mirage(
        [
            "eval",
            "--trace",
            trace,
            "--agents",
            f"average,oracle,{model}",
            "--episodes",
            "4",
            "--jobs",
            "2",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0
    for name in ("episodes.csv", "summary.json", "summary.md", "gap_cdf.png"):
        assert (out / name).stat().st_size > 0, name
    doc = json.loads((out / "summary.json").read_text())
    assert doc["meta"]["agents"] == ["reactive", "average", "oracle", "pg"]
    every = [s for s in doc["summary"] if s["level"] == "all"]
    assert {s["agent"]: s["chains"] for s in every} == dict.fromkeys(doc["meta"]["agents"], 4)
    oracle = next(s for s in every if s["agent"] == "oracle")
    reactive = next(s for s in every if s["agent"] == "reactive")
    assert oracle["abs_gap_hours_mean"] <= reactive["abs_gap_hours_mean"] + 1e-9
    printed = capsys.readouterr()
    assert "### load: all" in printed.out
    # the log's stored site profile is the world by default, as for study and backtest
    assert doc["meta"]["simulator"]["profile"].endswith("hpc2n-excerpt.swf.profile.json")
    assert "Simulator: site profile hpc2n-excerpt.swf.profile.json" in printed.err
    assert "Spearman" in doc["meta"]["simulator"]["line"]


def test_eval_without_the_profile_says_so(tmp_path, capsys, hpc2n_path):
    out = tmp_path / "res"
    argv = ["eval", "--trace", hpc2n_path, "--no-profile", "--episodes", "1", "--out", str(out)]
    assert mirage([*argv, "--agents", "reactive", "--no-progress"]) == 0
    doc = json.loads((out / "summary.json").read_text())
    assert doc["meta"]["simulator"]["profile"] is None
    assert doc["meta"]["simulator"]["why_not"] == "--no-profile"
    assert "no site profile: --no-profile" in capsys.readouterr().err


def test_bad_inputs_give_clear_errors(tmp_path, capsys, hpc2n_path):
    assert mirage(["eval", "--trace", "x", "--agents", "reactive,nosuch"]) == 2
    assert "unknown policy 'nosuch'" in capsys.readouterr().err
    bad = tmp_path / "bad.swf"
    bad.write_text("1 2 3\n")
    with pytest.raises(SystemExit, match="cannot read trace"):
        mirage(["eval", "--trace", str(bad), "--agents", "reactive"])
    with pytest.raises(SystemExit, match="FROM:TO"):
        mirage(["eval", "--trace", hpc2n_path, "--train-range", "2022-01-01"])
