"""The synthetic workload generator and `hpcsim generate`."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from sim.cli import main as hpcsim
from sim.generate import COMMON_LIMITS_MIN, LublinParams, daily_weights, generate, offered_load
from sim.traces import read_trace, write_swf
from sim.traces.model import ARRAY_FIELDS

FIELDS = ARRAY_FIELDS


def same(a, b) -> None:
    for name in FIELDS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert (a.unit, a.total_units, a.start_epoch, a.user_names, a.group_names, a.names) == (
        b.unit,
        b.total_units,
        b.start_epoch,
        b.user_names,
        b.group_names,
        b.names,
    )


def test_deterministic_by_seed():
    same(generate(2000, 128, seed=7), generate(2000, 128, seed=7))
    other = generate(2000, 128, seed=8)
    assert not np.array_equal(generate(2000, 128, seed=7).runtime, other.runtime)


def test_model_shape():
    t = generate(50_000, 128, seed=1)
    assert len(t) == 50_000 and t.total_units == 128 and t.unit == "procs"
    assert t.job_id.tolist() == list(range(1, 50_001)) and t.submit[0] == 0
    assert np.all(np.diff(t.submit) >= 0)
    serial = np.mean(t.units == 1)
    assert 0.24 < serial < 0.31  # serial_prob plus parallel draws that round to 1
    par = t.units[t.units > 1]
    pow2 = np.mean((par & (par - 1)) == 0)
    assert pow2 > 0.6  # power-of-two bias (0.576 / 0.756 of parallel jobs, plus chance hits)
    assert t.units.max() <= 128 and t.units.min() >= 1
    # run time grows with size (p = pa * size + pb falls)
    assert np.median(t.runtime[t.units >= 32]) > 3 * np.median(t.runtime[t.units == 1])
    assert t.runtime.min() >= 1 and t.runtime.max() <= np.exp(12)
    assert (t.limit >= t.runtime).all()
    common = {m * 60 for m in COMMON_LIMITS_MIN}
    assert set(np.unique(t.limit).tolist()) <= common
    assert 0.08 < np.mean(t.limit == 48 * 3600) < 0.3
    # daily cycle: more submits in the early afternoon than at dawn
    hour = (t.submit % 86400) // 3600
    assert np.sum(hour == 14) > 3 * np.sum(hour == 5)
    # users: Zipf, the first user most frequent
    counts = np.bincount(t.user)
    assert counts.argmax() == t.user_names.index("1")


def test_daily_weights_normalised_and_peaking_after_noon():
    w = daily_weights(LublinParams())
    assert w.shape == (48,) and abs(w.mean() - 1) < 1e-12
    assert 24 <= int(w.argmax()) <= 32  # 12:00..16:00


@pytest.mark.parametrize("load", [0.3, 0.8, 1.5])
def test_load_target(load):
    t = generate(20_000, 256, seed=3, load=load)
    assert abs(offered_load(t) / load - 1) < 0.01
    # the same jobs, only the arrivals scaled
    base = generate(20_000, 256, seed=3)
    assert np.array_equal(base.runtime, t.runtime) and np.array_equal(base.units, t.units)


def test_small_machines_and_bad_arguments():
    assert set(generate(500, 1, seed=0).units.tolist()) == {1}
    assert generate(500, 3, seed=0).units.max() <= 3
    assert len(generate(1, 16, seed=0, load=0.5)) == 1
    for args in [(0, 16, 0), (10, 0, 0)]:
        with pytest.raises(ValueError):
            generate(*args)
    with pytest.raises(ValueError, match="load"):
        generate(10, 16, 0, load=0)


def test_round_trip_through_swf(tmp_path):
    t = generate(5000, 96, seed=11, load=0.7)
    path = tmp_path / "g.swf"
    write_swf(t, path)
    back = read_trace(path)
    same(t, back)
    assert back.warnings == [] and back.fmt == "swf"


def test_cli_writes_readable_swf(tmp_path, capsys):
    out = tmp_path / "w.swf"
    rc = hpcsim(
        [
            "generate",
            "--jobs",
            "3000",
            "--units",
            "64",
            "--seed",
            "5",
            "--load",
            "0.9",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    assert "wrote 3000 jobs" in capsys.readouterr().out
    text = out.read_text()
    assert "; MaxProcs: 64" in text and "; UnixStartTime: 1704067200" in text
    same(read_trace(out), generate(3000, 64, seed=5, load=0.9))


def test_cli_errors(tmp_path, capsys):
    assert hpcsim(["generate", "--jobs", "0", "--units", "8", "--out", str(tmp_path / "x")]) == 2
    assert "n_jobs must be at least 1" in capsys.readouterr().err
    assert (
        hpcsim(
            [
                "generate",
                "--jobs",
                "5",
                "--units",
                "8",
                "--out",
                str(tmp_path / "missing" / "x.swf"),
            ]
        )
        == 1
    )
    assert "cannot write" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        hpcsim(["generate", "--units", "8"])


def test_console_script_entry():
    proc = subprocess.run(
        [sys.executable, "-m", "sim.cli", "generate", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "--load" in proc.stdout
