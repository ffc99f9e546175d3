"""``mirage backtest`` on a small generated log whose load shifts halfway: the declared
weeks, the rolling model beating the frozen one, resuming, and reproducibility."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mirage.backtest.cli import main
from sim.generate import LublinParams, generate
from sim.traces.model import ARRAY_FIELDS
from sim.traces.swf import write_swf

DAY = 86400.0


def shifting_log(path: Path, units: int = 64, days: float = 28.0) -> None:
    """Four weeks at offered load 0.25, then four at 0.45 (64 units, limits up to 24 h)."""
    parts = []
    for k, load in enumerate((0.25, 0.45)):
        t = generate(6000, units, k, load, params=LublinParams(max_limit=24 * 3600))
        parts.append((t.window(0, days * DAY), k * days * DAY))
    shifted = ("submit", "recorded_start")
    arrays = {
        f: np.concatenate([getattr(t, f) + (off if f in shifted else 0) for t, off in parts])
        for f in ARRAY_FIELDS
    }
    arrays["job_id"] = np.arange(1, arrays["submit"].shape[0] + 1)
    write_swf(replace(parts[0][0], names=[], partitions=[], **arrays), path)


ARGS = [
    "--chains-per-week", "10", "--seeds", "0,1", "--epochs", "5", "--chain-units", "8",
    "--chain-limit-hours", "24", "--min-train-days", "14", "--decision-interval", "3600",
    "--no-progress",
]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    folder = tmp_path_factory.mktemp("backtest")
    log = folder / "shift.swf"
    shifting_log(log)
    out = folder / "out"
    assert main([str(log), "--out", str(out), *ARGS]) == 0
    return log, out, json.loads((out / "backtest.json").read_text())


def test_declared_weeks_and_outputs(run: tuple[Path, Path, dict]) -> None:
    _, out, summary = run
    plan = json.loads((out / "plan.json").read_text())
    roles = [w["role"] for w in plan["weeks"]]
    assert roles.count("test") == 4 and roles.count("dev") == 1  # the last four are the test
    assert roles[: roles.index("dev")] == ["history"] * roles.index("dev")
    assert (out / "backtest.png").stat().st_size > 0 and "| rolling |" in (
        out / "backtest.md"
    ).read_text()
    assert [w["role"] for w in summary["weeks"]] == ["dev", "test", "test", "test", "test"]
    # beside each of the three tables (dev total, test total, weeks): the simulator (no site
    # profile is stored for this log) and the replay's fidelity (this log records no starts)
    sim = json.loads((out / "fidelity.json").read_text())
    assert sim == summary["simulator"] and sim["fidelity"] is None
    line = (
        "Simulator: Slurm's defaults, priority by age, 64 procs (no site profile: none stored; "
        "`hpcsim fit TRACE` makes one). Replay fidelity: the log records no start times to "
        "compare with."
    )
    sections = (out / "backtest.md").read_text().split("\n## ")[1:]
    assert sim["line"] == line and len(sections) == 3
    assert all(sec.count(line) == 1 for sec in sections), sections


def test_rolling_beats_frozen_after_the_shift(run: tuple[Path, Path, dict]) -> None:
    tot = run[2]["totals"]["test"]
    assert tot["rolling"]["abs_gap"] < tot["frozen"]["abs_gap"]
    assert tot["rolling"]["abs_gap"] < tot["reactive"]["abs_gap"]
    assert tot["oracle"]["abs_gap"] <= tot["rolling"]["abs_gap"]
    # the adaptation window is chosen on the development week alone, and reported on the test
    chosen = run[2]["adaptation"]["window_days"]
    dev = run[2]["adaptation"]["dev_abs_gap_h"]
    assert dev[str(chosen)] == min(dev.values())
    assert tot["oracle"]["abs_gap"] <= tot["adapted"]["abs_gap"]


def test_resume_reproduces_an_origin(run: tuple[Path, Path, dict]) -> None:
    """A stopped run (one origin's outcome and models gone) resumes to the same figures."""
    log, out, summary = run
    last = sorted((out / "origins").glob("*.json"))[-1]
    before = json.loads(last.read_text())
    last.unlink()
    shutil.rmtree(out / "models" / last.stem)
    assert main([str(log), "--out", str(out), *ARGS]) == 0
    after = json.loads(last.read_text())
    assert after["gaps"] == before["gaps"] and after["chosen"] == before["chosen"]
    assert json.loads((out / "backtest.json").read_text()) == summary


def test_origins_train_on_the_declared_history_window(run: tuple[Path, Path, dict]) -> None:
    """``--history-days`` (56 by default, as ``mirage retrain``) bounds what an origin trains
    and validates on: the weeks that end within that many days before it."""
    from mirage.backtest.origin import known_data, plan_from_json
    from sim.traces import read_trace

    log, out, _ = run
    plan = plan_from_json(json.loads((out / "plan.json").read_text()))
    assert plan.history_days == 56.0
    epoch = read_trace(log).start_epoch
    last = plan.origins[-1]
    everything = known_data(out, replace(plan, history_days=0.0), last, epoch)
    week = known_data(out, replace(plan, history_days=7.0), last, epoch)
    assert everything is not None and week is not None
    n_all = everything[0].episodes + everything[1].episodes
    n_week = week[0].episodes + week[1].episodes
    assert 0 < n_week < n_all
    for part in week:  # every chain started in the week before the origin
        assert part.ep_t0.min() >= last.start - 7 * DAY


def test_another_plan_is_refused(run: tuple[Path, Path, dict]) -> None:
    log, out, _ = run
    with pytest.raises(SystemExit, match="declares another plan"):
        main([str(log), "--out", str(out), *ARGS, "--seed", "7"])


@pytest.mark.slurm
def test_slurm_array_gives_the_local_figures(
    run: tuple[Path, Path, dict],
    slurm_cluster,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """The origins as a Slurm array on the real local cluster (one task per two origins,
    the labels already made): the same report as the local run."""
    log, local, summary = run
    out = tmp_path / "array"
    out.mkdir()
    shutil.copytree(local / "labels", out / "labels")  # labelling stays local; reuse it
    shutil.copy(local / "plan.json", out / "plan.json")
    array = ["--slurm-array", "3", "--slurm-poll", "1", "--sbatch-option", "time=10:00"]
    assert main([str(log), "--out", str(out), *ARGS, *array]) == 0
    assert json.loads((out / "backtest.json").read_text()) == summary
    assert len(list((out / "shards").glob("shard-*-of-3.json"))) == 3


def test_declared_periods_are_data_found_by_the_logs_content(tmp_path: Path) -> None:
    """A log's backtest periods come from ``NAME.backtest.json`` with the log's SHA-256, not
    from its name; the shipped LS6 declaration is found for the LS6 log wherever it lies."""
    from mirage.backtest.plan import declared_periods
    from sim.traces import read_trace

    log = tmp_path / "ls6-like.swf"
    write_swf(generate(300, 64, seed=3), log)
    trace = read_trace(log)
    assert declared_periods(trace) is None  # the name says nothing
    (tmp_path / "ls6-like.swf.backtest.json").write_text(
        json.dumps({"sha256": trace.digest, "test_from": "2024-02-01", "note": "seen"})
    )
    got = declared_periods(read_trace(log))
    assert got is not None and got.test_from == "2024-02-01" and got.note == "seen"
    shipped = Path(__file__).resolve().parents[2] / "../shared/traces/ls6-a100.log"
    if shipped.exists():
        ls6 = declared_periods(read_trace(shipped))
        assert ls6 is not None and ls6.test_from == "2023-02-27"
