"""`hpcsim calibrate`: recovers the size a log was recorded on; stores, finds, uses it."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from sim import calibration
from sim.calibrate_cli import main as calibrate_main
from sim.config import SlurmConfig
from sim.replay_cli import main as replay_main
from sim.traces import read_trace
from tests.sim.recorded import recorded_on, write_recorded

TRUE_SIZE = 20


@pytest.fixture
def user_cache(tmp_path, monkeypatch):
    folder = tmp_path / "user-cache"
    monkeypatch.setenv("HPCSIM_CACHE_DIR", str(folder))
    return folder


def cli(main, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main([*args, "--no-progress"])
    return rc, out.getvalue(), err.getvalue()


def test_search_recovers_the_recorded_size_exactly(tmp_path):
    trace = read_trace(write_recorded(tmp_path / "rec.swf", TRUE_SIZE))
    seen = []
    cal = calibration.calibrate(
        trace, lo=16, hi=32, points=5, workers=2, warmup=0.05, on_result=seen.append
    )
    best = cal.best
    assert best.units == TRUE_SIZE and best.score == 0 and best.median_abs_error_h == 0
    assert best.spearman == pytest.approx(1)
    assert len(seen) == len(cal.candidates) <= 5 + 2 * 3
    sizes = [c.units for c in cal.candidates]
    assert sizes == sorted(set(sizes)) and sizes[0] == 16 and sizes[-1] == 32
    # smaller clusters wait longer: the curve the search walks is monotone here
    means = [c.mean_h for c in cal.candidates]
    assert means == sorted(means, reverse=True)
    assert cal.sha256 == trace.digest and cal.recorded["mean_h"] == pytest.approx(best.mean_h)


def test_knob_search_and_replay_applies_the_stored_knobs(tmp_path, user_cache):
    cfg = SlurmConfig(bf_max_job_test=3)
    path = tmp_path / "rec.swf"
    from sim.traces import write_swf

    write_swf(recorded_on(TRUE_SIZE, cfg=cfg), path)
    rc, out, err = cli(
        calibrate_main,
        str(path),
        "--min",
        "17",
        "--max",
        "23",
        "--points",
        "3",
        "--search",
        "bf_max_job_test=3,500",
        "--jobs",
        "1",
        "--warmup",
        "0.05",
    )
    assert rc == 0, err
    stored = json.loads((tmp_path / "rec.swf.calibration.json").read_text())
    assert stored["best_units"] == TRUE_SIZE and stored["best_knobs"] == {"bf_max_job_test": 3}
    assert "bf_max_job_test=3" in out
    rc, out, err = cli(replay_main, str(path))
    assert rc == 0 and "with bf_max_job_test=3" in err and f"on {TRUE_SIZE} procs" in out


def test_cli_prints_every_candidate_stores_and_replay_uses_it(tmp_path, user_cache):
    path = write_recorded(tmp_path / "rec.swf", TRUE_SIZE)
    png = tmp_path / "curve.png"
    rc, out, err = cli(
        calibrate_main,
        str(path),
        "--min",
        "16",
        "--max",
        "32",
        "--jobs",
        "2",
        "--plot",
        str(png),
        "--warmup",
        "0.05",
    )
    assert rc == 0, err
    stored = tmp_path / "rec.swf.calibration.json"
    cal = calibration.Calibration.from_json(stored.read_text())
    rows = [ln.split("│")[1:-1] for ln in out.splitlines() if ln.startswith("│")]
    table = {r[0].strip(): [x.strip() for x in r[1:]] for r in rows}
    assert "recorded" in table
    for c in cal.candidates:  # one table row per candidate, with its errors
        assert table[str(c.units)][4] == f"{100 * c.mean_error:+.1f}%"
        assert table[str(c.units)][5] == f"{100 * c.p90_error:+.1f}%"
    assert f"best: {TRUE_SIZE} procs" in out and "+0.0%" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.glob(".*.tmp*"))
    trace = read_trace(path)
    assert calibration.stored_units(trace) == TRUE_SIZE
    rc, out, err = cli(replay_main, str(path))
    assert rc == 0 and "cluster size from calibration" in err and f"on {TRUE_SIZE} procs" in out
    rc, out, err = cli(replay_main, str(path), "--nodes", "30")
    assert rc == 0 and "on 30 procs" in out
    rc, out, err = cli(replay_main, str(path), "--no-calibration")
    assert rc == 0 and "cluster size from calibration" not in err


def test_stored_calibration_follows_the_content_not_the_name(tmp_path, user_cache):
    path = write_recorded(tmp_path / "rec.swf", TRUE_SIZE)
    trace = read_trace(path)
    cal = calibration.calibrate(trace, lo=18, hi=22, points=3, workers=1, warmup=0.05)
    calibration.store(cal, path)
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    copy = moved / "renamed.swf"
    copy.write_bytes(path.read_bytes())
    # found beside the original only: a copy under another name has no calibration beside
    assert calibration.stored_units(read_trace(copy)) is None
    calibration.store(cal, path, directory=None)
    # an edited file does not use the old calibration
    path.write_text(path.read_text().replace("; Version: 2.2", "; Version: 2.2\n; edited"))
    assert calibration.stored_units(read_trace(path)) is None
    # the user cache keys by content, so a read-only archive folder still gets one
    archive = tmp_path / "archive"
    archive.mkdir()
    ro = archive / "log.swf"
    ro.write_bytes(copy.read_bytes())
    archive.chmod(0o555)
    try:
        where = calibration.store(cal, ro)
        assert where.parent == user_cache / "calibrations"
        assert (
            calibration.stored_units(read_trace(ro))
            == calibration.stored_units(read_trace(copy))
            == cal.units
        )
    finally:
        archive.chmod(0o755)


def test_traces_without_recorded_starts_are_refused_in_one_line(tmp_path):
    from sim.generate import generate
    from sim.traces import write_swf

    path = tmp_path / "gen.swf"
    write_swf(generate(300, 16, seed=1), path)
    rc, out, err = cli(calibrate_main, str(path))
    assert rc == 2 and "records no start times" in err and len(err.strip().splitlines()) == 1
    rc, out, err = cli(calibrate_main, str(path), "--search", "bf_window")
    assert rc == 2 and "KNOB=V1,V2" in err
    rc, out, err = cli(calibrate_main, str(path), "--search", "nodes=1,2")
    assert rc == 2 and "cannot search 'nodes'" in err


def test_compared_jobs_skip_the_warm_up():
    trace = recorded_on(TRUE_SIZE, jobs=400)
    first = float(np.nanmin(trace.recorded_start))
    idx, since = calibration.compared_jobs(trace, warmup=0.2)
    assert since == pytest.approx(first + 0.2 * trace.submit[-1])
    assert (trace.submit[idx] >= since).all() and (trace.submit[idx[0] - 1] < since)
    idx, since = calibration.compared_jobs(trace, since=0.0)
    assert idx.size == len(trace)
