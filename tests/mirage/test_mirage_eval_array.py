"""``mirage eval --slurm-array N``: sharding, option checks, and a real Slurm array whose
merged table equals the local pool's."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from hpcbase.slurm import get_client
from mirage.eval import array as eval_array
from mirage.eval.cli import main


def _args(out: Path, *extra: str) -> list[str]:
    import sim.data

    return [
        "--trace",
        str(sim.data.default_trace_path()),
        "--train-range",
        "2023-01-03:2023-01-14",
        "--validation-range",
        "2023-01-16:2023-01-28",
        "--split",
        "validation",
        "--agents",
        "reactive,average",
        "--episodes",
        "4",
        "--no-progress",
        "--out",
        str(out),
        *extra,
    ]


@pytest.mark.parametrize("episodes,shards", [(1, 1), (4, 2), (7, 3), (10, 10), (100, 7)])
def test_every_episode_in_exactly_one_shard(episodes, shards):
    parts = [eval_array.shard_indices(episodes, shards, i) for i in range(shards)]
    assert sorted(k for part in parts for k in part) == list(range(episodes))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_shard_and_option_parsing():
    assert eval_array.parse_shard("2/5") == (2, 5)
    for bad in ("5/5", "-1/3", "1", "a/b", "0/0"):
        with pytest.raises(ValueError, match="--shard"):
            eval_array.parse_shard(bad)
    opts = eval_array.parse_sbatch_options(["time=1:00", "exclusive", "--qos=low"])
    assert opts == {"time": "1:00", "exclusive": True, "qos": "low"}
    with pytest.raises(ValueError, match="--slurm-array"):
        eval_array.parse_sbatch_options(["array=0-3"])


def test_stale_shard_is_refused(tmp_path):
    eval_array.write_shard(tmp_path, 0, 2, [1.0, 3.0], [{"agent": "reactive", "t0": 1.0}])
    assert eval_array.read_shard(tmp_path, 0, 2, [1.0, 3.0]) == [{"agent": "reactive", "t0": 1.0}]
    with pytest.raises(eval_array.ArrayError, match="other episodes"):
        eval_array.read_shard(tmp_path, 0, 2, [2.0])


@pytest.mark.parametrize("n", ["0", "5", "-1"])
def test_bad_shard_count(tmp_path, n, capsys):
    with pytest.raises(SystemExit) as exc:
        main(_args(tmp_path, "--slurm-array", n))
    assert exc.value.code == 2
    assert "--slurm-array: expected 1 .. --episodes (4) shards" in capsys.readouterr().err


def test_slurm_unavailable_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch anywhere
    assert main(_args(tmp_path / "out", "--slurm-array", "2")) == 1
    err = capsys.readouterr().err
    assert "cannot submit the Slurm array" in err and "sbatch not found" in err


@pytest.mark.slurm
def test_array_equals_local_pool(slurm_cluster, tmp_path):
    assert main(_args(tmp_path / "local", "--jobs", "2")) == 0
    assert (
        main(
            _args(
                tmp_path / "array",
                "--slurm-array",
                "2",
                "--slurm-poll",
                "1",
                "--sbatch-option",
                "time=5:00",
            )
        )
        == 0
    )
    local, array = tmp_path / "local", tmp_path / "array"
    assert (array / "episodes.csv").read_text() == (local / "episodes.csv").read_text()
    assert len((array / "episodes.csv").read_text().splitlines()) == 1 + 2 * 4
    s_local = json.loads((local / "summary.json").read_text())
    s_array = json.loads((array / "summary.json").read_text())
    assert s_array["summary"] == s_local["summary"]
    assert (array / "gap_cdf.png").stat().st_size > 0
    assert sorted(p.name for p in (array / "shards").glob("shard-*")) == [
        "shard-0-of-2.json",
        "shard-1-of-2.json",
    ]


@pytest.mark.slurm
def test_failed_task_is_named_with_its_log(slurm_cluster, tmp_path):
    # task 1 fails; task 0 writes its shard. Arguments after "x" are the appended
    # --out DIR --no-progress --shard I/N.
    script = (
        'if [ "$5" = 1/2 ]; then echo boom >&2; exit 3; fi\n'
        f'exec {shlex.quote(sys.executable)} -c "import sys; from pathlib import Path; '
        "from mirage.eval.array import write_shard; "
        "write_shard(Path(sys.argv[1]), 0, 2, [1.0], [{'agent': 'reactive', 't0': 1.0}])\" \"$2\""
    )
    client = get_client(min_interval=1.0)
    with pytest.raises(eval_array.ArrayError) as exc:
        eval_array.run_array(
            client,
            ["bash", "-c", script, "x"],
            [1.0, 2.0],
            2,
            tmp_path / "shards",
            poll=1.0,
            progress=False,
        )
    msg = str(exc.value)
    assert "1 of 2 tasks failed" in msg and "FAILED=1" in msg
    assert "task 1 (job " in msg and "task 0" not in msg
    assert "_1.log" in msg and "boom" in msg


@pytest.mark.slurm
def test_dataset_array_equals_local_labels(slurm_cluster, tmp_path):
    """``mirage dataset --slurm-array``: the chains labelled by array tasks, merged in
    order, are the local run's labels exactly."""
    import numpy as np

    import sim.data
    from mirage import dataset as ds

    def args(out: Path, *extra: str) -> list[str]:
        return [
            "--trace",
            str(sim.data.default_trace_path()),
            "--train-range",
            "2023-01-03:2023-01-14",
            "--split",
            "train",
            "--episodes",
            "3",
            "--chain-sizes",
            "1,2",
            "--no-progress",
            "--out",
            str(out),
            *extra,
        ]

    assert ds.main(args(tmp_path / "local.parquet")) == 0
    slurm = ["--slurm-array", "2", "--slurm-poll", "1", "--sbatch-option", "time=5:00"]
    assert ds.main(args(tmp_path / "array.parquet", *slurm)) == 0
    local, array = ds.load(tmp_path / "local.parquet"), ds.load(tmp_path / "array.parquet")
    assert array.episodes == local.episodes == 3
    for name in ("gap", "ep_t0", "ep_units", "ep_end_gap", "ctx"):
        assert np.array_equal(getattr(array, name), getattr(local, name)), name
    assert np.array_equal(array.obs(), local.obs())
    assert len(list((tmp_path / "array.shards").glob("shard-*-of-2.json"))) == 2
