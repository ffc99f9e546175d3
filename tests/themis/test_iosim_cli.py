"""`themis sim`: runs, prints the table and findings, writes CSV/JSON/plots, clear errors."""

from __future__ import annotations

import csv
import json

from themis.cli import main as themis_main
from themis.iosim.cli import main


def test_sim_size_scenario_writes_results(tmp_path, capsys):
    out = tmp_path / "res"
    rc = main(
        [
            "--scenario",
            "size",
            "--duration",
            "0.3",
            "--servers",
            "2",
            "--runs",
            "fifo,size-fair,job-fair:sfq",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "size-fair:lottery" in text and "small:large = 1:" in text
    runs = list(csv.DictReader((out / "runs.csv").open()))
    assert [r["run"] for r in runs] == ["fifo", "size-fair:lottery", "job-fair:sfq"]
    assert all(float(r["throughput"]) > 0 for r in runs)
    jobs = list(csv.DictReader((out / "jobs.csv").open()))
    sf = {j["job_id"]: float(j["share"]) for j in jobs if j["run"] == "size-fair:lottery"}
    assert abs(sf["small"] - 0.2) < 0.04
    data = json.loads((out / "results.json").read_text())
    assert data["runs"][1]["jobs"][0]["slowdown"] > 1.0
    for png in ("summary.png", "shares.png", "timelines-size.png"):
        assert (out / png).stat().st_size > 1000


def test_sim_mix_from_replay_csv_via_themis_command(tmp_path, capsys):
    replay = tmp_path / "replay.csv"
    replay.write_text(
        "job_id,user,units,submit,start,end\n"
        + "".join(f"{i},u{i % 3},{1 + i % 4},0,{i},{100 + i}\n" for i in range(12))
    )
    rc = themis_main(
        [
            "sim",
            "--scenario",
            "mix",
            "--replay",
            str(replay),
            "--duration",
            "0.05",
            "--servers",
            "4",
            "--runs",
            "fifo,user-then-size-fair",
            "--out",
            str(tmp_path / "o"),
            "--no-plots",
            "--no-progress",
        ]
    )
    assert rc == 0
    assert "12 jobs running" in capsys.readouterr().out
    assert len(list(csv.DictReader((tmp_path / "o" / "jobs.csv").open()))) == 24


def test_sim_bad_input_is_a_clear_error(tmp_path, capsys):
    assert main(["--runs", "size-fair:warp", "--no-progress"]) == 2
    assert "unknown dispatcher 'warp'" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,user\n1,a\n")
    assert main(["--scenario", "mix", "--replay", str(bad), "--no-progress"]) == 2
    assert "missing column(s)" in capsys.readouterr().err
    assert main(["--duration", "-1", "--no-progress"]) == 2
    assert "--duration must be > 0" in capsys.readouterr().err
