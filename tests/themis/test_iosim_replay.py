"""Job mixes: rows from a `sim` replay result (hand-made CSV and a real `hpcsim replay`)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from themis.iosim.engine import IOSim
from themis.iosim.model import ServerSpec
from themis.iosim.replay import ReplayError, concurrent_slice, rows_from_replay_csv
from themis.iosim.workload import MixRow, mix_from_rows, synthetic_rows

CSV = """job_id,user,units,submit,start,end
1,alice,4,0,10,100
2,bob,1,0,20,50
3,bob,8,5,,
4,carol,2,0,30,
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "replay.csv"
    p.write_text(text)
    return p


def test_rows_from_hand_made_replay_csv(tmp_path):
    rows = rows_from_replay_csv(write(tmp_path, CSV))
    assert [r.job_id for r in rows] == ["1", "2", "4"]  # 3 never started
    assert rows[0] == MixRow("1", "alice", "alice", 4, 10.0, 100.0)
    assert rows[2].end == math.inf
    grouped = rows_from_replay_csv(
        write(tmp_path, "job_id,user,group,units,start,end\n7,dan,physics,6,0,1\n"),
        units_per_node=4,
    )
    assert grouped[0].group == "physics" and grouped[0].nodes == 2


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("job_id,user,start,end\n1,a,0,1\n", "line 1: missing column(s) units"),
        ("job_id,user,units,start,end\n1,a,x,0,1\n", "line 2: column 'units': not a number"),
        ("job_id,user,units,start,end\n1,a,0,0,1\n", "line 2: column 'units' must be >= 1"),
        (
            "job_id,user,units,start,end\n1,a,1,0,1\n2,b,1,5,3\n",
            "line 3: column 'end' (3.0) is before",
        ),
    ],
)
def test_bad_replay_files_name_file_and_line(tmp_path, text, needle):
    path = write(tmp_path, text)
    with pytest.raises(ReplayError) as err:
        rows_from_replay_csv(path)
    assert str(path) in str(err.value) and needle in str(err.value)
    with pytest.raises(ReplayError, match="cannot read"):
        rows_from_replay_csv(tmp_path / "missing.csv")


def test_concurrent_slice_finds_the_busiest_moment(tmp_path):
    rows = rows_from_replay_csv(write(tmp_path, CSV))
    at, running = concurrent_slice(rows)
    assert at == 30.0 and {r.job_id for r in running} == {"1", "2", "4"}
    assert {r.job_id for r in concurrent_slice(rows, 60.0)[1]} == {"1", "4"}


def test_mix_from_rows_scales_time_and_keeps_profiles_stable():
    rows = [MixRow("a", "u", "g", 2, 100.0, 200.0), MixRow("b", "v", "g", 100, 150.0, 400.0)]
    jobs = mix_from_rows(rows, time_scale=0.01, max_nodes=64)
    assert [(j.start, j.end) for j in jobs] == [(0.0, 1.0), (0.5, 3.0)]
    assert jobs[1].tag.nodes == 64
    again = mix_from_rows(list(reversed(rows)), time_scale=0.01, max_nodes=64)
    assert {j.tag.job_id: j.profile for j in again} == {j.tag.job_id: j.profile for j in jobs}
    assert len({j.profile.kind for j in mix_from_rows(synthetic_rows(60))}) == 3


def test_mix_from_a_real_hpcsim_replay(tmp_path):
    """The real `hpcsim replay` writes the CSV; the adapter reads it and the mix simulates."""
    from sim.replay_cli import main as replay_main

    out = tmp_path / "schedule.csv"
    assert replay_main(["--out", str(out), "--no-progress"]) == 0  # the embedded LS6 slice
    rows = rows_from_replay_csv(out)
    assert len(rows) > 1000
    at, running = concurrent_slice(rows)
    assert len(running) >= 5
    jobs = mix_from_rows(
        [MixRow(r.job_id, r.user, r.group, r.nodes, 0.0, math.inf) for r in running]
    )
    res = IOSim(jobs, ServerSpec(count=8), "user-then-size-fair").run(0.05)
    assert res.chunks > 0 and sum(j.bytes for j in res.jobs) > 0
