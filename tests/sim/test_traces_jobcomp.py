"""Slurm's jobcomp/filetxt log as a trace: detection, fields, diagnostics, the replay CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.traces import TraceError, detect_format, read_trace

LOG = Path(__file__).parents[1] / "slurm" / "data" / "jobcomp.txt"  # a real cluster's log


def test_reads_the_local_clusters_log() -> None:
    t = read_trace(LOG)
    assert t.fmt == "jobcomp" and detect_format(LOG.read_text()) == "jobcomp"
    assert sorted(t.job_id.tolist()) == [5, 6, 7, 9, 11]
    i = {int(j): k for k, j in enumerate(t.job_id)}
    assert t.runtime[i[5]] == 20 and t.limit[i[5]] == 60  # TimeLimit=1 (minutes)
    assert t.limit[i[6]] == 2880 * 60 and t.names[i[6]] == "name with spaces"
    assert t.exit_code[i[11]] == 137 and t.exit_code[i[9]] == 3  # ExitCode 0:9, 3:0
    assert t.partitions[i[5]] == "debug" and t.user_names == ["root"]
    assert np.all(t.recorded_start >= t.submit)
    # the two jobs cancelled while pending (NodeList=(null)) are counted, not malformed
    (w,) = t.warnings
    assert w.kind == "skipped" and w.count == 2 and w.line == 6
    assert read_trace(LOG, unit="procs").units[i[5]] == 4


def test_malformed_line_is_named(tmp_path: Path) -> None:
    lines = LOG.read_text().splitlines()
    lines[2] = lines[2].replace("NodeCnt=1", "NodeCnt=x")
    lines[3] = lines[3].replace("SubmitTime=", "SubmitTime=yesterday")
    lines.insert(4, "JobId=99 Name=half a line")
    bad = tmp_path / "jobcomp.txt"
    bad.write_text("\n".join(lines) + "\n")
    t = read_trace(bad)
    reasons = {w.line: w.reason for w in t.warnings if w.kind == "malformed"}
    assert set(reasons) == {3, 4, 5}
    assert "NumNodes" in reasons[3] and "row skipped" in reasons[3]
    assert "yesterday" in reasons[4]
    assert "lacks SubmitTime" in reasons[5]
    assert len(t) == 3
    with pytest.raises(TraceError, match=r"jobcomp\.txt:3: .*NumNodes"):
        read_trace(bad, strict=True)


def test_empty_of_jobs_and_bad_unit(tmp_path: Path) -> None:
    only = tmp_path / "jc.log"
    only.write_text(LOG.read_text().splitlines()[5] + "\n")  # one cancelled-pending job
    with pytest.raises(TraceError, match="no usable jobs in the jobcomp log"):
        read_trace(only)
    with pytest.raises(TraceError, match="not 'bogus'"):
        read_trace(LOG, unit="bogus")


def test_hpcsim_replay_accepts_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sim.cli import main

    assert main(["replay", str(LOG), "--out", str(tmp_path / "schedule.csv")]) == 0
    assert "not a recognised trace" not in capsys.readouterr().err


@pytest.mark.slurm
def test_the_live_clusters_own_log(slurm_cluster) -> None:  # type: ignore[no-untyped-def]
    """Jobs run on the real local cluster come back from its jobcomp log as a trace."""
    from hpcbase.slurm import RetryPolicy, get_client
    from tests.slurm.test_slurm_live import submit, wait_for

    slurm = get_client("cli", min_interval=0.2, policy=RetryPolicy(attempts=3, timeout=20))
    ids = [submit(slurm, "sleep 1", cpus=c, limit=lim) for c, lim in ((2, "3:00"), (3, "1:00:00"))]

    def logged() -> object:
        text = slurm_cluster.jobcomp_path.read_text()
        return all(f"JobId={i} " in text for i in ids) or None

    wait_for("the jobs in the jobcomp log", logged)
    t = read_trace(slurm_cluster.jobcomp_path, unit="procs")
    i = {int(j): k for k, j in enumerate(t.job_id)}
    assert [int(t.units[i[j]]) for j in ids] == [2, 3]
    assert [float(t.limit[i[j]]) for j in ids] == [180.0, 3600.0]
    assert all(0.5 <= t.runtime[i[j]] <= 30 for j in ids)
