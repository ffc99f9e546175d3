"""Recorded against simulated: the comparison's figures, the warning, the schedule CSV."""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from sim.availability import recorded_usage
from sim.replay_cli import main as replay
from sim.report import compare, spearman
from sim.traces import write_swf
from sim.traces.read import read_trace
from tests.sim.recorded import recorded_on, write_recorded


def frame(sim_wait, rec_wait, run=3600.0, units=1) -> pd.DataFrame:
    n = len(sim_wait)
    submit = np.arange(n, dtype=float) * 3600
    start = submit + np.asarray(sim_wait, float)
    rec = submit + np.asarray(rec_wait, float)
    return pd.DataFrame(
        {
            "submit": submit,
            "start": start,
            "end": start + run,
            "wait": start - submit,
            "units": np.full(n, units),
            "recorded_start": rec,
            "recorded_wait": rec - submit,
            "recorded_end": rec + run,
        }
    )


def test_figures_by_hand():
    h = 3600.0
    df = frame([0, h, 2 * h, 3 * h, 10 * h], [0, 2 * h, 2 * h, 5 * h, 6 * h])
    c = compare(df, total_units=2)
    assert c.jobs == 5
    assert c.simulated.mean_h == pytest.approx(16 / 5) and c.recorded.mean_h == pytest.approx(3)
    assert c.simulated.median_h == pytest.approx(2) and c.recorded.median_h == pytest.approx(2)
    assert c.recorded.p95_h == pytest.approx(5.8)  # numpy's linear interpolation: 5 + 0.8 * 1
    assert c.median_abs_error_h == pytest.approx(1)  # |d| = 0, 1, 0, 2, 4
    # 5 one-hour one-unit jobs; span from first submit to last end on 2 units
    assert c.simulated.utilisation == pytest.approx(5 / (2 * (4 + 10 + 1)))
    assert c.recorded.utilisation == pytest.approx(5 / (2 * (4 + 6 + 1)))
    assert c.spearman == pytest.approx(
        spearman(np.array([0, 1, 2, 3, 10.0]), np.array([0, 2, 2, 5, 6.0]))
    )
    assert c.warning() is None


def test_mean_waits_per_job_size_class():
    """Large jobs that wait far too long hide in an aggregate: each size class apart."""
    h = 3600.0
    df = frame([0, h, 2 * h, 30 * h, 3 * h], [0, 2 * h, 2 * h, h, 5 * h])
    df["units"] = [1, 1, 3, 80, 16]
    c = compare(df, total_units=100, unit="nodes")
    got = {s.label: (s.jobs, s.sim_mean_h, s.rec_mean_h) for s in c.sizes}
    assert got == {
        "1 nodes": (2, 0.5, 1.0),
        "2-4 nodes": (1, 2.0, 2.0),
        "5-16 nodes": (1, 3.0, 5.0),
        ">=65 nodes": (1, 30.0, 1.0),
    }
    rows = [r for r in c.rows() if r[0].startswith("mean wait, jobs of")]
    assert rows[-1] == ("mean wait, jobs of >=65 nodes (1)", "30.00 h", "1.00 h")
    one = compare(frame([0, h], [h, 0]), total_units=2)  # one class: no extra rows
    assert len(one.sizes) == 1 and not any("jobs of" in r[0] for r in one.rows())


def test_spearman_matches_the_rank_formula():
    a = np.array([1.0, 2, 3, 4, 5])
    assert spearman(a, a**3) == pytest.approx(1) and spearman(a, -a) == pytest.approx(-1)
    # no ties: 1 - 6 sum d^2 / (n (n^2 - 1))
    b = np.array([2.0, 1, 4, 3, 5])
    assert spearman(a, b) == pytest.approx(1 - 6 * 4 / (5 * 24))
    assert math.isnan(spearman(a, np.ones(5)))


def test_more_than_twice_apart_warns_both_ways():
    h = 3600.0
    assert "2.5x the recorded" in compare(frame([5 * h, 0], [2 * h, 0]), 1).warning()
    assert "1/4.0 of the recorded" in compare(frame([h, 0], [4 * h, 0]), 1).warning()
    assert compare(frame([2 * h, 0], [h, 0]), 1).warning() is None  # exactly 2x: no warning
    assert compare(frame([0, 0], [30.0, 0]), 1).warning() is None  # 0 against 15 s: no error
    assert "0 x the recorded" in compare(frame([0, 0], [900.0, 0]), 1).warning()  # 7.5 min


def test_no_recorded_starts_no_comparison():
    df = frame([0, 1], [0, 1]).assign(recorded_start=np.nan)
    assert compare(df, 1) is None
    assert compare(df.drop(columns=["recorded_start"]), 1) is None


def run_replay(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = replay([*args, "--no-progress"])
    return rc, out.getvalue(), err.getvalue()


def test_replay_reproduces_a_schedule_it_recorded(tmp_path):
    """A log recorded by the simulator itself, replayed on the same size: zero error."""
    trace = write_recorded(tmp_path / "rec.swf", units=24)
    csv = tmp_path / "s.csv"
    rc, out, err = run_replay(str(trace), "--nodes", "24", "--out", str(csv))
    assert rc == 0, err
    assert "per job: median |simulated - recorded| wait" in out and "1.000" in out
    assert "warning: simulated mean wait" not in err
    df = pd.read_csv(csv)
    assert {"start", "recorded_start", "wait", "recorded_wait"} <= set(df.columns)
    assert np.allclose(df["start"], df["recorded_start"])
    c = compare(df, 24)
    assert c.median_abs_error_h == 0 and c.spearman == pytest.approx(1)
    assert c.simulated == c.recorded


def test_replay_on_a_cluster_smaller_than_the_recorded_schedule_is_refused(tmp_path):
    trace = write_recorded(tmp_path / "rec.swf", units=32)
    peak = recorded_usage(read_trace(str(trace))).peak
    rc, out, err = run_replay(str(trace), "--nodes", str(peak - 1))
    assert rc == 2
    assert f"the recorded schedule used {peak} procs" in err and "cannot have run it" in err


def test_a_log_whose_schedule_outgrows_the_size_it_states_is_named_not_one_machine(tmp_path):
    """A header below the recorded schedule for much of its span: the size is raised to the
    peak, and the replay says that the log is not one machine's schedule."""
    over = tmp_path / "over.swf"
    write_swf(replace(recorded_on(32), total_units=12), over)
    assert read_trace(str(over)).size_stated
    peak = recorded_usage(read_trace(str(over))).peak
    rc, out, err = run_replay(str(over))
    assert rc == 0, err
    assert f"size raised from 12 to the recorded peak of {peak}" in err
    assert "not one machine's schedule" in err and "more than the 12 procs it states" in err
    consistent = tmp_path / "ok.swf"
    write_swf(replace(recorded_on(32), total_units=32), consistent)
    rc, out, err = run_replay(str(consistent))
    assert rc == 0, err
    assert "not one machine's schedule" not in err and "size raised" not in err


def test_a_headerless_log_replays_on_its_recorded_peak_never_above_100_percent(tmp_path):
    trace = write_recorded(tmp_path / "rec.swf", units=32)
    text = "\n".join(ln for ln in trace.read_text().splitlines() if not ln.startswith(";"))
    bare = tmp_path / "bare.swf"
    bare.write_text(text + "\n")
    peak = recorded_usage(read_trace(str(bare))).peak
    rc, out, err = run_replay(str(bare))
    assert rc == 0, err
    assert "size raised from" in err and f"on {peak} procs" in out
    # it states no size (its largest job stands in): no claim that it outgrows one
    assert not read_trace(str(bare)).size_stated
    assert "not one machine's schedule" not in err
    assert "KS distance" in out
    util = [ln for ln in out.splitlines() if ln.startswith("│ utilisation")][-1]
    rec_util = float(util.split("│")[3].strip().rstrip("%").strip())
    assert rec_util <= 100


def test_a_log_without_recorded_starts_replays_as_before(tmp_path):
    trace = write_recorded(tmp_path / "rec.swf", units=32)
    lines = trace.read_text().splitlines()
    rows = [ln.split() for ln in lines if not ln.startswith(";")]
    for r in rows:
        r[2] = "-1"  # wait unknown
    plain = tmp_path / "plain.swf"
    head = [ln for ln in lines if ln.startswith(";")]
    plain.write_text("\n".join(head + [" ".join(r) for r in rows]) + "\n")
    rc, out, err = run_replay(str(plain))
    assert rc == 0, err
    # as before issue 23: no header, so the largest job's size, and no comparison
    largest = int(read_trace(str(plain)).units.max())
    assert f"on {largest} procs" in out and "recorded" not in out and "availability" not in err
    assert "no fidelity figures: the log records no job's start" in err


def test_a_replay_that_runs_away_is_replayed_with_its_availability_relaxed(tmp_path, monkeypatch):
    """Where the replay's queue outgrows its bound (here made zero, so that every guarded
    step runs away), the availability relaxes step by step, each step said, and the last
    runs to the end; a log replayed within its bound is replayed once. ``--timings`` sums
    each phase over the runs (the world inferred, then simulated, once per step)."""
    import sim.fit
    from sim.replay_cli import RELAX_STEPS

    trace = write_recorded(tmp_path / "rec.swf", units=24)
    once, relaxed = tmp_path / "once.json", tmp_path / "relaxed.json"
    rc, out, err = run_replay(str(trace), "--timings", str(once))
    assert rc == 0, err
    assert "ran away" not in err
    monkeypatch.setattr(sim.fit, "RUNAWAY_FACTOR", 0.0)
    rc, out, err = run_replay(str(trace), "--timings", str(relaxed))
    assert rc == 0, err
    phases = [json.loads(p.read_text())["phases"] for p in (once, relaxed)]
    assert [list(p) for p in phases] == [["read", "infer", "simulate", "report"]] * 2
    assert phases[1]["infer"]["cpu_s"] > phases[0]["infer"]["cpu_s"] > 0
    text = " ".join(err.split())
    assert text.count("the replay ran away") == len(RELAX_STEPS) - 1
    assert "(bound 0)" in text and "not narrowed" in text
    assert f"within {RELAX_STEPS[-1][0] / 3600:g} h around each moment, not narrowed" in text
    assert "KS distance" in out
