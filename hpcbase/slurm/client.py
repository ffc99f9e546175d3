"""The one Slurm client interface of the suite, and its command-line backend."""

from __future__ import annotations

import abc
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from hpcbase.slurm import parse
from hpcbase.slurm.cache import QueryCache
from hpcbase.slurm.errors import SlurmError, SlurmUnavailable
from hpcbase.slurm.models import JobInfo, PartitionInfo
from hpcbase.slurm.runner import CommandRunner, RetryPolicy
from hpcbase.snapshot import QueueSnapshot

#: Default floor between two real queries of the same kind, in seconds.
DEFAULT_MIN_INTERVAL = 10.0
#: Partition sizes change rarely: how long they are cached by default.
PARTITION_MAX_AGE = 300.0

Options = Mapping[str, object] | Sequence[str] | None
_SQUEUE_FORMAT = ",".join(f"{f}:0{parse.SEP}" for f in parse.SQUEUE_FIELDS)


def options_to_args(options: Options) -> list[str]:
    """sbatch options as arguments. A mapping takes ``{"n": 4, "time": "1:00",
    "-J": "x", "hold": True}`` (one letter -> ``-n 4``, longer -> ``--time=1:00``; True is a
    bare flag; None/False are left out); a sequence is passed as it is."""
    if options is None:
        return []
    if not isinstance(options, Mapping):
        return [str(o) for o in options]
    args: list[str] = []
    for key, value in options.items():
        name = key.lstrip("-")
        if not name:
            raise SlurmError(f"empty sbatch option name: {key!r}")
        if value is None or value is False:
            continue
        flag = f"-{name}" if len(name) == 1 else f"--{name}"
        if value is True:
            args.append(flag)
        elif len(name) == 1:
            args += [flag, str(value)]
        else:
            args.append(f"{flag}={value}")
    return args


class SlurmClient(abc.ABC):
    """Talks to one Slurm cluster. Reads are cached and throttled (:class:`QueryCache`):
    at most one real query of a kind per ``min_interval`` seconds; ``max_age`` asks for
    data at most that old (waiting out the floor if needed)."""

    def __init__(
        self,
        min_interval: float = DEFAULT_MIN_INTERVAL,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.cache = QueryCache(min_interval, clock=clock, sleep=sleep)

    # ---- what a backend implements -------------------------------------------------------
    @abc.abstractmethod
    def submit(
        self,
        script_or_wrap: str | Path,
        options: Options = None,
        env: Mapping[str, str] | None = None,
    ) -> int:
        """Submit a batch job; return its id. A :class:`Path` is a script file, a string that
        starts with ``#!`` a script's text, any other string a command for ``--wrap``."""

    def test_only(self, script_or_wrap: str | Path, options: Options = None) -> float | None:
        """When a job submitted now would start (``sbatch --test-only``: Unix time, nothing
        is submitted); None where the backend cannot tell."""
        return None

    @abc.abstractmethod
    def cancel(self, job_id: int) -> None:
        """Cancel a job (no error if it has already ended)."""

    @abc.abstractmethod
    def ping(self) -> bool:
        """Whether slurmctld answers now (one quick try, never raises)."""

    @abc.abstractmethod
    def _fetch_queue(self) -> list[JobInfo]:
        """All active jobs of all partitions."""

    @abc.abstractmethod
    def _fetch_recent(self) -> list[JobInfo]:
        """All jobs slurmctld remembers, finished ones included (for ``MinJobAge``)."""

    @abc.abstractmethod
    def _fetch_job(self, job_id: int) -> JobInfo | None:
        """One job, finished ones included while Slurm remembers them."""

    @abc.abstractmethod
    def _fetch_partitions(self) -> list[PartitionInfo]:
        """All partitions."""

    @abc.abstractmethod
    def _fetch_start_estimates(self) -> dict[int, tuple[str, float | None]]:
        """Pending jobs -> (partition, expected start or None)."""

    # ---- cached, throttled reads ---------------------------------------------------------
    def _queue_at(self, max_age: float | None) -> tuple[float, list[JobInfo]]:
        return self.cache.get("queue", lambda: (time.time(), self._fetch_queue()), max_age)

    def queue(self, partition: str | None = None, max_age: float | None = None) -> list[JobInfo]:
        """Active jobs (pending, running, completing...), of one partition if named."""
        _, jobs = self._queue_at(max_age)
        return [j for j in jobs if _in_partition(j, partition)]

    def recent_jobs(self, max_age: float | None = None) -> list[JobInfo]:
        """Every job slurmctld still remembers, finished ones included (``squeue -t all``):
        one query for the states of many jobs."""
        return self.cache.get("recent", self._fetch_recent, max_age)

    def job(self, job_id: int, max_age: float | None = None) -> JobInfo | None:
        """One job, or None when Slurm no longer (or never) knew it."""
        jid = int(job_id)
        return self.cache.get(("job", jid), lambda: self._fetch_job(jid), max_age)

    def partitions(self, max_age: float | None = PARTITION_MAX_AGE) -> list[PartitionInfo]:
        return self.cache.get("partitions", self._fetch_partitions, max_age)

    def partition(
        self, name: str | None = None, max_age: float | None = PARTITION_MAX_AGE
    ) -> PartitionInfo:
        """A partition by name; without a name the default partition."""
        parts = self.partitions(max_age)
        if not parts:
            raise SlurmError("Slurm reports no partitions")
        if name is None:
            return next((p for p in parts if p.default), parts[0])
        for p in parts:
            if p.name == name:
                return p
        raise SlurmError(
            f"no partition named {name!r}; partitions: {', '.join(p.name for p in parts)}"
        )

    def start_estimates(
        self, partition: str | None = None, max_age: float | None = None
    ) -> dict[int, float | None]:
        """Slurm's expected start (Unix s, None if unknown) of each pending job, as
        ``squeue --start`` reports it."""
        est = self.cache.get("start", self._fetch_start_estimates, max_age)
        return {
            jid: t
            for jid, (part, t) in est.items()
            if partition is None or partition in part.split(",")
        }

    def snapshot(self, partition: str | None = None, max_age: float | None = None) -> QueueSnapshot:
        """The queue of one partition (default: the default partition) as a QueueSnapshot.
        Units are CPUs on a one-node partition, nodes otherwise; a job without a limit of
        its own gets the partition's MaxTime (inf if unlimited); pending jobs that may not
        start yet (dependency, begin time, hold) have NaN eligibility."""
        part = self.partition(partition)
        now, jobs = self._queue_at(max_age)
        pend: list[tuple[int, int, float, float, float]] = []
        run: list[tuple[int, int, float, float]] = []
        for j in jobs:
            if not _in_partition(j, part.name):
                continue
            units = j.cpus if part.units == "cpus" else j.nodes
            limit = j.time_limit if j.time_limit is not None else part.max_time
            lim = math.inf if limit is None else float(limit)
            if j.pending:
                eligible = j.eligible if j.eligible is not None and j.is_eligible(now) else math.nan
                submit = j.submit if j.submit is not None else now
                pend.append((j.id, units, lim, submit, eligible))
            elif j.running:
                run.append((j.id, units, lim, j.start if j.start is not None else now))
        return QueueSnapshot.from_rows(now, part.total_units, pend, run)

    def _invalidate_queue(self, job_id: int | None = None) -> None:
        self.cache.invalidate(lambda k: k in ("queue", "start", "recent") or k == ("job", job_id))


def _sbatch_argv(
    script_or_wrap: str | Path, options: Options, mode: str
) -> tuple[list[str], str | None]:
    """``sbatch MODE OPTIONS SCRIPT`` (or ``--wrap``) and the script text for stdin."""
    argv = ["sbatch", mode, *options_to_args(options)]
    stdin = None
    if isinstance(script_or_wrap, Path):
        if not script_or_wrap.is_file():
            raise SlurmError(f"batch script not found: {script_or_wrap}")
        argv.append(str(script_or_wrap))
    elif script_or_wrap.startswith("#!"):
        stdin = script_or_wrap
    else:
        argv += ["--wrap", script_or_wrap]
    return argv, stdin


def _in_partition(job: JobInfo, partition: str | None) -> bool:
    return partition is None or partition in (job.partition or "").split(",")


class CliClient(SlurmClient):
    """The default backend: Slurm's commands (sbatch, squeue, scontrol, scancel, sacct).

    ``conf`` sets ``SLURM_CONF`` for the commands (default: the environment's).
    """

    def __init__(
        self,
        conf: str | Path | None = None,
        *,
        min_interval: float = DEFAULT_MIN_INTERVAL,
        policy: RetryPolicy | None = None,
        runner: CommandRunner | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(min_interval, clock=clock, sleep=sleep)
        env = {"SLURM_CONF": str(conf)} if conf is not None else {}
        self.runner = runner or CommandRunner(policy, env=env, sleep=sleep)
        self._accounting: bool | None = None  # unknown until sacct is first needed

    @property
    def calls(self) -> Counter[str]:
        """Real command invocations so far, per program."""
        return self.runner.calls

    def submit(
        self,
        script_or_wrap: str | Path,
        options: Options = None,
        env: Mapping[str, str] | None = None,
    ) -> int:
        argv, stdin = _sbatch_argv(script_or_wrap, options, "--parsable")
        out = self.runner.run(argv, input=stdin, env=env, idempotent=False)
        self._invalidate_queue()
        return parse.parse_sbatch(out)

    def test_only(self, script_or_wrap: str | Path, options: Options = None) -> float | None:
        argv, stdin = _sbatch_argv(script_or_wrap, options, "--test-only")
        return parse.parse_test_only(self.runner.run(argv, input=stdin, with_stderr=True))

    def cancel(self, job_id: int) -> None:
        self.runner.run(["scancel", str(int(job_id))])
        self._invalidate_queue(int(job_id))

    def ping(self) -> bool:
        quick = CommandRunner(
            RetryPolicy(attempts=1, timeout=min(self.runner.policy.timeout, 15.0)),
            env=self.runner.env,
        )
        try:
            out = quick.run(["scontrol", "ping"])
        except SlurmError:
            return False
        finally:
            self.runner.calls.update(quick.calls)
        return " is UP" in out

    def version(self) -> tuple[int, int]:
        """Slurm's (major, minor) version, from ``scontrol -V`` (no slurmctld needed)."""
        out = self.runner.run(["scontrol", "-V"])
        m = re.search(r"(\d+)\.(\d+)", out)
        if not m:
            raise SlurmError(f"cannot read Slurm's version from {out.strip()!r}")
        return int(m.group(1)), int(m.group(2))

    def _fetch_queue(self) -> list[JobInfo]:
        return parse.parse_squeue(self.runner.run(["squeue", "-h", "-O", _SQUEUE_FORMAT]))

    def _fetch_recent(self) -> list[JobInfo]:
        return parse.parse_squeue(
            self.runner.run(["squeue", "-h", "-t", "all", "-O", _SQUEUE_FORMAT])
        )

    def _fetch_job(self, job_id: int) -> JobInfo | None:
        try:
            out = self.runner.run(["scontrol", "show", "job", "-o", str(job_id)])
        except SlurmUnavailable:
            raise
        except SlurmError as e:
            if "Invalid job id" not in str(e):
                raise
            return self._sacct_job(job_id)
        return parse.parse_scontrol_job(out)

    def _sacct_job(self, job_id: int) -> JobInfo | None:
        if self._accounting is False:
            return None
        fields = ",".join(parse.SACCT_FIELDS)
        try:
            out = self.runner.run(["sacct", "-n", "-P", "-X", "-j", str(job_id), "-o", fields])
        except SlurmUnavailable:
            raise
        except SlurmError as e:
            if "accounting storage is disabled" in str(e).lower():
                self._accounting = False
                return None
            raise
        self._accounting = True
        jobs = parse.parse_sacct(out)
        return next((j for j in jobs if j.id == job_id), None)

    def _fetch_partitions(self) -> list[PartitionInfo]:
        return parse.parse_partitions(self.runner.run(["scontrol", "show", "partition", "-o"]))

    def _fetch_start_estimates(self) -> dict[int, tuple[str, float | None]]:
        out = self.runner.run(["squeue", "--start", "-h", "-o", "%i|%P|%S"])
        return parse.parse_start_estimates(out)
