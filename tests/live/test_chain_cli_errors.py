"""Bad input to ``mirage chain`` gives one clear line naming the problem (no traceback) and
records nothing. These checks run before Slurm is contacted."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mirage.chain.cli import main
from mirage.chain.store import ChainStore


@pytest.fixture
def state(tmp_path, monkeypatch):
    d = tmp_path / "state"
    monkeypatch.setenv("MIRAGE_STATE_DIR", str(d))
    return d


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "seg.sh"
    p.write_text("#!/bin/bash\nsleep 1\n")
    return p


def chains_in(state) -> int:
    if not (state / "chains.db").exists():
        return 0
    store = ChainStore(state)
    try:
        return len(store.chains())
    finally:
        store.close()


def run(capsys, *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    return rc, capsys.readouterr().err


def test_missing_script(state, capsys, tmp_path):
    rc, err = run(capsys, "submit", str(tmp_path / "nope.sh"), "--segments", "3")
    assert rc == 2 and "nope.sh: no such file" in err and "Traceback" not in err
    assert chains_in(state) == 0


def test_zero_segments(state, capsys, script):
    with pytest.raises(SystemExit) as e:
        main(["submit", str(script), "--segments", "0"])
    assert e.value.code == 2
    assert "--segments" in capsys.readouterr().err and chains_in(state) == 0


def test_unknown_policy(state, capsys, script):
    rc, err = run(capsys, "submit", str(script), "--segments", "2", "--policy", "psychic")
    assert rc == 2 and "unknown policy 'psychic'" in err and "reactive" in err
    assert chains_in(state) == 0


def test_unreadable_model(state, capsys, script, tmp_path):
    bad = tmp_path / "model.zip"
    bad.write_bytes(b"not a zip at all")
    rc, err = run(capsys, "submit", str(script), "--segments", "2", "--policy", str(bad))
    assert rc == 2 and str(bad) in err and "not a Mirage model" in err
    rc, err = run(
        capsys, "submit", str(script), "--segments", "2", "--policy", str(tmp_path / "missing.zip")
    )
    assert rc == 2 and "missing.zip: no such file" in err
    assert chains_in(state) == 0


def test_reserved_sbatch_option(state, capsys, script):
    rc, err = run(capsys, "submit", str(script), "--segments", "2", "--comment=x")
    assert rc == 2 and "--comment is set by mirage" in err and chains_in(state) == 0


def test_unknown_chain(state, capsys):
    rc, err = run(capsys, "status", "deadbeef")
    assert rc == 2 and "no chain 'deadbeef'" in err


def test_agentd_bad_config_is_one_line(tmp_path):
    cfg = tmp_path / "mirage.toml"
    cfg.write_text("[history]\nsample_interval = -5\n")
    proc = subprocess.run(
        [sys.executable, "-m", "mirage.agentd", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert f"{cfg}: history.sample_interval: must be > 0" in proc.stderr
    assert "Traceback" not in proc.stderr
