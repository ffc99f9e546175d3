"""`hpcsim replay` end to end: the embedded default, outputs, and bad input."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest


def hpcsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sim.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_replay_embedded_default_writes_schedule_and_plot(tmp_path):
    out, png = tmp_path / "s.csv", tmp_path / "p.png"
    res = hpcsim("replay", "--out", str(out), "--plot", str(png))
    assert res.returncode == 0, res.stderr
    assert "mean wait" in res.stdout and "started by backfill" in res.stdout
    df = pd.read_csv(out)
    assert len(df) > 4000 and (df["start"] >= df["submit"]).all()
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_replay_with_a_site_slurm_conf_and_parquet(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet output needs the parquet extra")
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "PriorityType=priority/multifactor\nPriorityWeightJobSize=1000\n"
        "AccountingStorageType=accounting_storage/slurmdbd\nPriorityWeightAge=1000\n"
    )
    out = tmp_path / "s.parquet"
    res = hpcsim("replay", "--slurm-conf", str(conf), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert len(pd.read_parquet(out)) > 4000


def test_garbage_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "junk.bin"
    bad.write_bytes(bytes(range(256)) * 20)
    res = hpcsim("replay", str(bad))
    assert res.returncode == 2
    assert "junk.bin" in res.stderr and "Traceback" not in res.stderr


def test_bad_slurm_conf_names_the_line(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nPriorityWeightAge=many\n")
    res = hpcsim("replay", "--slurm-conf", str(conf))
    assert res.returncode == 2 and "slurm.conf:2" in res.stderr and "Traceback" not in res.stderr


def test_bad_output_suffix_is_reported(tmp_path):
    res = hpcsim("replay", "--out", str(tmp_path / "s.txt"))
    assert res.returncode == 2 and ".csv or .parquet" in res.stderr


def test_log_text_is_printed_as_it_is(tmp_path):
    """A log's own text in a message (a bad field, a line number) is printed as it is: no
    rich markup (``[/x]`` made a crash) and no emoji code (``:1234:`` made a picture)."""
    rows = ["job_id,user,submit,start,end,nodes,limit", "1,u,0,10,100,1,60", "[/x],u,0,10,100,1,60"]
    rows += [f"{i},u,{100 * i},{100 * i},{100 * i + 50},1,60" for i in range(2, 1240)]
    rows += ["x:smile:,u,0,10,100,1,60"]
    log = tmp_path / "a[b]:1234:.csv"
    log.write_text("\n".join(rows) + "\n")
    res = hpcsim("replay", str(log), "--no-progress")
    assert res.returncode == 0, res.stderr
    assert "bad job_id '[/x]'" in res.stderr and "bad job_id 'x:smile:'" in res.stderr
    assert f"{log}:1242:" in res.stderr and f"{log}:3:" in res.stderr
    assert "a[b]:1234:.csv" in res.stdout
