"""``mirage eval --slurm-array N`` and ``mirage dataset --slurm-array N``: the seeded episodes
split into N shards, one Slurm array task each (through :mod:`hpcbase.slurm`), merged back
into what the local pool would give.

Each task runs the same command with ``--shard I/N --out SHARD_DIR`` and writes
``shard-I-of-N.json`` atomically; the parent waits for the array (throttled polls of
``recent_jobs``), then checks every shard against its own episode list and merges them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hpcbase.atomic import atomic_write
from hpcbase.slurm import SlurmClient, SlurmError

LOG_PATTERN = "task-%A_%a.log"


class ArrayError(RuntimeError):
    """A sharded evaluation could not run or a task failed; the message says which and why."""


def add_array_args(p: argparse.ArgumentParser, what: str) -> None:
    """The ``--slurm-array``, ``--sbatch-option`` and ``--slurm-poll`` options (and the
    hidden ``--shard`` of one task)."""
    p.add_argument(
        "--slurm-array",
        type=int,
        default=None,
        metavar="N",
        help=f"run {what} as N shards of one Slurm array job, then merge",
    )
    p.add_argument(
        "--sbatch-option",
        action="append",
        default=[],
        metavar="K=V",
        help="extra sbatch option for the array, e.g. time=2:00:00 (repeatable)",
    )
    p.add_argument(
        "--slurm-poll",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds between polls of the array's state (default 10)",
    )
    p.add_argument("--shard", default=None, help=argparse.SUPPRESS)  # I/N: one array task


def check_array_args(
    p: argparse.ArgumentParser, args: argparse.Namespace, episodes: int
) -> tuple[tuple[int, int] | None, dict[str, object]]:
    """This task's shard (None outside an array task) and the sbatch options; exits with
    a usage error naming the option on a bad value."""
    shard = None
    try:
        if args.shard is not None:
            shard = parse_shard(args.shard)
        options = parse_sbatch_options(args.sbatch_option)
    except ValueError as exc:
        p.error(str(exc))
    if args.slurm_array is not None and shard is None:
        if not 1 <= args.slurm_array <= episodes:
            p.error(
                f"--slurm-array: expected 1 .. --episodes ({episodes}) shards, "
                f"got {args.slurm_array}"
            )
        if args.slurm_poll <= 0:
            p.error("--slurm-poll must be positive")
    return shard, options


def shard_indices(episodes: int, shards: int, index: int) -> list[int]:
    """Episode indices of shard ``index`` of ``shards`` (strided: index, index + shards, ...)."""
    if shards < 1 or not 0 <= index < shards:
        raise ValueError(f"shard {index}/{shards}: need 0 <= I < N and N >= 1")
    return list(range(index, episodes, shards))


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N) with 0 <= I < N."""
    i, sep, n = text.partition("/")
    try:
        index, shards = int(i), int(n)
    except ValueError:
        raise ValueError(f"--shard: expected I/N, got {text!r}") from None
    if not sep or shards < 1 or not 0 <= index < shards:
        raise ValueError(f"--shard: expected I/N with 0 <= I < N, got {text!r}")
    return index, shards


def parse_sbatch_options(items: Sequence[str]) -> dict[str, object]:
    """``["time=1:00", "exclusive"]`` -> ``{"time": "1:00", "exclusive": True}``."""
    out: dict[str, object] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip().lstrip("-")
        if not key:
            raise ValueError(f"--sbatch-option: expected KEY=VALUE or KEY, got {item!r}")
        if key == "array":
            raise ValueError("--sbatch-option: 'array' is set by --slurm-array")
        out[key] = value if eq else True
    return out


def shard_path(folder: Path, index: int, shards: int) -> Path:
    return folder / f"shard-{index}-of-{shards}.json"


def write_shard(
    folder: Path, index: int, shards: int, starts: Sequence[Any], rows: list[dict[str, Any]]
) -> Path:
    """The raw rows of one shard, with the starts it played, written atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    path = shard_path(folder, index, shards)
    doc = {"shard": index, "of": shards, "starts": list(starts), "rows": rows}
    atomic_write(path, json.dumps(doc).encode())
    return path


def read_shard(folder: Path, index: int, shards: int, starts: Sequence[Any]) -> list[dict]:
    """One shard's rows; ArrayError when missing, unreadable or for other episodes."""
    path = shard_path(folder, index, shards)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ArrayError(f"no shard file {path}") from None
    except (OSError, ValueError) as exc:
        raise ArrayError(f"{path}: cannot read shard: {exc}") from None
    if doc.get("starts") != list(starts):
        raise ArrayError(f"{path}: shard holds other episodes than this run's (stale file?)")
    return list(doc["rows"])


def task_script(command: Sequence[str], shards: int, shard_dir: Path) -> str:
    """The array's batch script: ``command`` plus this task's ``--shard`` and ``--out``."""
    fixed = shlex.join([*command, "--out", str(shard_dir), "--no-progress"])
    return f'#!/bin/bash\nexec {fixed} --shard "${{SLURM_ARRAY_TASK_ID}}/{shards}"\n'


def submit_array(
    client: SlurmClient,
    command: Sequence[str],
    shards: int,
    shard_dir: Path,
    options: Mapping[str, object] | None = None,
) -> tuple[int, str]:
    """Submit one ``--array=0-(N-1)`` job; returns (array job id, job name)."""
    shard_dir.mkdir(parents=True, exist_ok=True)
    for old in shard_dir.glob("shard-*-of-*.json"):  # never merge a previous run's shards
        old.unlink()
    name = f"mirage-array-{uuid.uuid4().hex[:8]}"
    opts: dict[str, object] = {
        "J": name,
        "output": str(shard_dir / LOG_PATTERN),
        "chdir": str(Path.cwd()),
    }
    opts.update(options or {})
    opts["array"] = f"0-{shards - 1}"
    job_id = client.submit(task_script(command, shards, shard_dir), opts)
    return job_id, name


def wait_array(
    client: SlurmClient, name: str, shards: int, poll: float, progress: bool = True
) -> Counter[str]:
    """Poll (at most once per ``poll`` s) until no task of the array named ``name`` is
    pending or running; returns the final states' counts."""
    from tqdm import tqdm

    bar = tqdm(desc="slurm array", unit="task", disable=not progress, total=shards)
    states: Counter[str] = Counter()
    try:
        while True:
            jobs = [j for j in client.recent_jobs(max_age=poll) if j.name == name]
            states = Counter(j.state for j in jobs)
            bar.update(sum(not (j.pending or j.running) for j in jobs) - bar.n)
            bar.set_postfix_str(" ".join(f"{k.lower()}={v}" for k, v in sorted(states.items())))
            if not any(j.pending or j.running for j in jobs):
                return states
            time.sleep(poll)
    finally:
        bar.close()


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        tail = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return "    (no log)"
    return "    (empty log)" if not tail else "\n".join("    " + line for line in tail)


def run_array(
    client: SlurmClient,
    command: Sequence[str],
    starts: Sequence[Any],
    shards: int,
    shard_dir: Path,
    options: Mapping[str, object] | None = None,
    poll: float = 10.0,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Submit, wait and merge; the rows of every shard, unordered. Ctrl-C cancels the array."""
    try:
        job_id, name = submit_array(client, command, shards, shard_dir, options)
    except SlurmError as exc:
        raise ArrayError(f"cannot submit the Slurm array: {exc}") from None
    print(
        f"submitted Slurm array job {job_id} ({shards} tasks, logs in {shard_dir}/)",
        file=sys.stderr,
    )
    try:
        states = wait_array(client, name, shards, poll, progress)
    except KeyboardInterrupt:
        client.cancel(job_id)
        raise
    except SlurmError as exc:
        raise ArrayError(f"lost track of Slurm array job {job_id}: {exc}") from None
    rows: list[dict[str, Any]] = []
    failed = []
    for i in range(shards):
        mine = [starts[k] for k in shard_indices(len(starts), shards, i)]
        try:
            rows += read_shard(shard_dir, i, shards, mine)
        except ArrayError as exc:
            log = shard_dir / LOG_PATTERN.replace("%A", str(job_id)).replace("%a", str(i))
            failed.append(f"  task {i} (job {job_id}_{i}): {exc}\n  log {log}:\n{_log_tail(log)}")
    if failed:
        seen = ", ".join(f"{k}={v}" for k, v in sorted(states.items()))
        raise ArrayError(
            f"Slurm array job {job_id}: {len(failed)} of {shards} tasks failed "
            f"(states: {seen or 'none seen'})\n" + "\n".join(failed)
        )
    return rows
