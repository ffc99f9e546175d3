"""``mirage chain submit`` keeps sbatch's meaning for every sbatch option.

No option of the chain shadows one of sbatch's (read from the installed sbatch's own help),
and every ``mirage chain submit`` example of the README, the docs and the systemd units
submits, on the real local cluster, what it says: its segments, nodes and time limit.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from hpcbase.slurm import get_client
from hpcbase.slurmtime import parse_duration
from mirage.chain.cli import build_parser
from mirage.chain.cli import main as chain_main
from mirage.chain.store import ChainStore

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *(REPO / "systemd").rglob("*")]


def _submit_parser_options() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")  # noqa: SLF001 - argparse's own
    submit = sub.choices["submit"]  # type: ignore[index]
    return {o for a in submit._actions for o in a.option_strings} - {"-h", "--help"}


def sbatch_options(tmp: Path) -> set[str]:
    """Every short and long option the installed sbatch lists in its help (sbatch wants a
    slurm.conf even for that: a minimal one)."""
    conf = tmp / "slurm.conf"
    conf.write_text("ClusterName=x\nSlurmctldHost=localhost\nNodeName=n\nPartitionName=p Nodes=n\n")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    text = subprocess.run(["sbatch", "--help"], capture_output=True, text=True, env=env).stdout
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+|-[A-Za-z])\b", text))


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="needs sbatch (slurm-wlm)")
def test_no_chain_option_shadows_an_sbatch_option(tmp_path: Path) -> None:
    ours = _submit_parser_options()
    theirs = sbatch_options(tmp_path)
    assert {"-N", "--nodes", "-t", "--time", "-p", "--partition"} <= theirs  # help was read
    assert ours & theirs == set()


def test_abbreviations_and_short_options_reach_sbatch() -> None:
    args, extra = build_parser().parse_known_args(
        ["submit", "job.sh", "--segments", "3", "-N", "1", "--part=gpu", "-t", "00:01:00"]
    )
    assert args.segments == 3
    assert extra == ["-N", "1", "--part=gpu", "-t", "00:01:00"]


def doc_examples() -> list[tuple[str, list[str]]]:
    """(where, argv after ``submit``) of every ``mirage chain submit`` example, optional
    ``[...]`` parts and comments left out, continuation lines joined."""
    found = []
    for path in DOCS:
        if not path.is_file():
            continue
        text = path.read_text(errors="replace").replace("\\\n", " ")
        for lineno, line in enumerate(text.splitlines(), 1):
            plain = re.sub(r"\[[^\]]*\]", " ", line)
            for m in re.finditer(r"mirage chain submit ([^`\n|]*)", plain):
                cmd = m.group(1).split("# ")[0].strip()
                argv = shlex.split(cmd)
                if argv and "--segments" in argv:
                    found.append((f"{path.relative_to(REPO)}:{lineno}", argv))
    return found


def _value(argv: list[str], *names: str) -> str | None:
    for i, a in enumerate(argv):
        if a in names and i + 1 < len(argv):
            return argv[i + 1]
        for n in names:
            if n.startswith("--") and a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def test_the_docs_have_examples() -> None:
    where = [w for w, _ in doc_examples()]
    assert any(w.startswith("README.md") for w in where), where
    assert len(where) >= 3, where


@pytest.mark.slurm
@pytest.mark.parametrize(("where", "argv"), doc_examples(), ids=lambda x: str(x)[:40])
def test_a_docs_example_submits_what_it_says(
    where: str, argv: list[str], slurm_cluster, tmp_path: Path
) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nsleep 1\n")
    # a site's partition name is the site's: here the local cluster's one partition
    rest = [
        "debug" if i and argv[i - 1] in ("-p", "--partition") else a for i, a in enumerate(argv)
    ]
    run = [str(script), *rest[1:], "--no-watch"]
    if "--policy" not in run:
        run += ["--policy", "reactive"]
    segments = int(_value(argv, "--segments") or 0)
    nodes = int(_value(argv, "-N", "--nodes") or 1)
    limit = _value(argv, "-t", "--time")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = chain_main(["--state-dir", str(tmp_path / "state"), "submit", *run])
    store = ChainStore(tmp_path / "state")
    try:
        (chain,) = store.chains()
        assert chain.segments == segments, where
        assert rc == 0, (where, err.getvalue())
        seg = store.segments(chain.id)[0]
        assert seg.job_id is not None
        job = get_client(conf=slurm_cluster.conf_path).job(seg.job_id)
        assert job is not None and job.nodes == nodes, (where, job)
        if limit is not None:
            assert job.time_limit == parse_duration(limit, fractions=False), (where, job)
        get_client(conf=slurm_cluster.conf_path).cancel(seg.job_id)
    finally:
        store.close()


@pytest.mark.slurm
def test_three_one_node_segments_of_one_minute(slurm_cluster, tmp_path: Path) -> None:
    """The issue's own example: ``--segments 3 -N 1 -t 00:01:00``."""
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nsleep 1\n")
    argv = [str(script), "--segments", "3", "-N", "1", "-t", "00:01:00", "--no-watch"]
    with contextlib.redirect_stdout(io.StringIO()):
        rc = chain_main(
            ["--state-dir", str(tmp_path / "s"), "submit", *argv, "--policy", "reactive"]
        )
    assert rc == 0
    store = ChainStore(tmp_path / "s")
    try:
        (chain,) = store.chains()
        assert chain.segments == 3
        seg = store.segments(chain.id)[0]
        job = get_client(conf=slurm_cluster.conf_path).job(seg.job_id)
        assert job is not None and job.nodes == 1 and job.time_limit == 60
        get_client(conf=slurm_cluster.conf_path).cancel(seg.job_id)
    finally:
        store.close()
