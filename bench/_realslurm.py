"""Run a small workload on a real local Slurm cluster (a helper, not a benchmark).

For the simulator-fidelity benchmark: the same jobs and the same scheduler settings
(``conf_extra``, appended to slurm.conf) go to real Slurm 22.05 here and to the simulator,
and the start/end times are compared.

    from bench._realslurm import WorkloadJob, run_workload, generate_conf
    rows = run_workload([WorkloadJob("a", cpus=4, limit_s=120, sleep_s=5),
                         WorkloadJob("b", 2, 60, 3, submit_offset_s=1, dependency="afterok:a")],
                        conf_extra=Path("sched.conf"), cpus=16, conf_out=Path("slurm.conf"))

Slurm keeps time limits in whole minutes: ``limit_s`` is rounded up to a minute by Slurm,
and each row reports the limit Slurm used (``limit_s``). Times are Unix seconds with Slurm's
one-second resolution.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mirage.slurm import CliClient, JobInfo, RetryPolicy, SlurmError, format_duration
from mirage.slurm.localcluster import LocalCluster

_DEP_KINDS = ("after", "afterok", "afternotok", "afterany", "aftercorr")


@dataclass(frozen=True, slots=True)
class WorkloadJob:
    """One job: ``sleep sleep_s`` on ``cpus`` CPUs with limit ``limit_s``, submitted
    ``submit_offset_s`` after the first submission; ``dependency`` names earlier jobs,
    e.g. ``"afterok:prep"`` or ``"afterany:a:b,afterok:c"``."""

    name: str
    cpus: int
    limit_s: int
    sleep_s: float
    submit_offset_s: float = 0.0
    dependency: str | None = None


def as_job(obj: WorkloadJob | Mapping[str, Any], index: int) -> WorkloadJob:
    """A :class:`WorkloadJob` from itself or a dict; a ValueError names the job and field."""
    if isinstance(obj, WorkloadJob):
        job = obj
    else:
        fields = set(WorkloadJob.__dataclass_fields__)
        unknown = set(obj) - fields
        if unknown:
            raise ValueError(
                f"job {index}: unknown field(s) {sorted(unknown)}; fields: {sorted(fields)}"
            )
        try:
            job = WorkloadJob(**obj)
        except TypeError as e:
            raise ValueError(f"job {index}: {e}") from None
    where = f"job {index} ({job.name!r})"
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", str(job.name)):
        raise ValueError(f"{where}: name must be letters, digits, '_', '.', '-'")
    if int(job.cpus) < 1:
        raise ValueError(f"{where}: cpus must be >= 1, got {job.cpus}")
    if int(job.limit_s) < 1:
        raise ValueError(f"{where}: limit_s must be >= 1, got {job.limit_s}")
    if float(job.sleep_s) < 0 or float(job.submit_offset_s) < 0:
        raise ValueError(f"{where}: sleep_s and submit_offset_s must be >= 0")
    return job


def resolve_dependency(dep: str | None, ids: Mapping[str, int], where: str) -> str | None:
    """``afterok:a:b,afterany:c`` with job names -> the same with Slurm job ids."""
    if not dep:
        return None
    out = []
    for part in dep.split(","):
        kind, *names = part.split(":")
        if kind not in _DEP_KINDS or not names:
            raise ValueError(f"{where}: bad dependency {part!r}; expected e.g. 'afterok:<name>'")
        missing = [n for n in names if n not in ids]
        if missing:
            raise ValueError(f"{where}: dependency on {missing}, which are not earlier jobs")
        out.append(":".join([kind, *(str(ids[n]) for n in names)]))
    return ",".join(out)


def generate_conf(conf_extra: Path | None, cpus: int, dest: Path) -> Path:
    """Write the slurm.conf that :func:`run_workload` uses for these settings to ``dest``
    (nothing is started), so the simulator can read the very same file."""
    with tempfile.TemporaryDirectory(prefix="mslurm-", dir="/tmp") as d:
        text = LocalCluster(Path(d) / "c", cpus=cpus, conf_extra=conf_extra).render_conf()
    dest.write_text(text)
    return dest


def _row(job: WorkloadJob, info: JobInfo | None, jid: int) -> dict[str, Any]:
    if info is None:
        raise SlurmError(f"Slurm no longer knows job {jid} ({job.name})")
    # A job cancelled while pending keeps its pending reason and gets start == end.
    never_ran = info.state == "CANCELLED" and info.reason is not None
    return {
        "name": job.name,
        "job_id": jid,
        "state": info.state,
        "cpus": info.cpus,
        "limit_s": info.time_limit,
        "submit": info.submit,
        "eligible": info.eligible,
        "start": None if never_ran else info.start,
        "end": info.end,
        "exit_code": info.exit_code,
    }


def run_workload(
    jobs: Iterable[WorkloadJob | Mapping[str, Any]],
    conf_extra: Path | None,
    cpus: int,
    *,
    conf_out: Path | None = None,
    poll_s: float = 1.0,
    timeout_s: float | None = None,
    progress: bool = True,
    log_out: Path | None = None,
) -> list[dict[str, Any]]:
    """Start a fresh local cluster (``cpus`` CPUs, ``conf_extra`` appended to slurm.conf),
    submit each job at its offset, wait until all have ended, stop the cluster, and return
    one row per job (in the order given): name, job_id, state, cpus, limit_s, submit,
    eligible, start, end, exit_code. Jobs whose dependency can never be met are cancelled
    (state CANCELLED, start None). ``conf_out`` receives a copy of the slurm.conf used,
    ``log_out`` a copy of the slurmctld log (taken when the cluster has stopped).
    """
    work = [as_job(j, i) for i, j in enumerate(jobs)]
    names = [j.name for j in work]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"job names must be unique; repeated: {sorted(dupes)}")
    order = sorted(range(len(work)), key=lambda i: work[i].submit_offset_s)
    if timeout_s is None:
        timeout_s = (
            max((j.submit_offset_s for j in work), default=0)
            + sum(min(j.sleep_s, j.limit_s + 60) for j in work)
            + 120
        )
    directory = Path(tempfile.mkdtemp(prefix="mslurm-bench-", dir="/tmp"))
    cluster = LocalCluster(directory / "c", cpus=cpus, conf_extra=conf_extra)
    ids: dict[str, int] = {}
    try:
        cluster.start()
        if conf_out is not None:
            shutil.copyfile(cluster.conf_path, conf_out)
        client = CliClient(
            cluster.conf_path,
            min_interval=poll_s,
            policy=RetryPolicy(attempts=5, timeout=30, backoff=0.5),
        )
        bar = tqdm(total=len(work), desc="real slurm: jobs ended", disable=not progress, unit="job")
        t0 = time.monotonic()
        for i in order:
            job = work[i]
            delay = t0 + job.submit_offset_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            where = f"job {i} ({job.name!r})"
            opts: dict[str, object] = {
                "J": job.name,
                "n": job.cpus,
                "time": format_duration(job.limit_s),
                "output": "/dev/null",
                "dependency": resolve_dependency(job.dependency, ids, where),
            }
            ids[job.name] = client.submit(f"sleep {job.sleep_s:g}", opts)
        want = set(ids.values())
        deadline = time.monotonic() + timeout_s
        while True:
            known = {j.id: j for j in client.recent_jobs() if j.id in want}
            ended = [j for j in known.values() if j.finished]
            bar.update(len(ended) - bar.n)
            active = [j for j in known.values() if not j.finished]
            if not active:
                break
            stuck = [j for j in active if j.reason == "DependencyNeverSatisfied"]
            if stuck and len(stuck) == len(active):
                for j in stuck:
                    client.cancel(j.id)
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"real Slurm workload not done after {timeout_s:.0f} s; still active: "
                    + ", ".join(f"{j.name}={j.state}({j.reason})" for j in active[:10])
                )
            time.sleep(poll_s)
        bar.close()
        final = {j.id: j for j in client.recent_jobs(max_age=0)}
        return [_row(job, final.get(ids[job.name]), ids[job.name]) for job in work]
    finally:
        cluster.stop()
        if log_out is not None:
            with contextlib.suppress(OSError):
                shutil.copyfile(cluster.dir / "log" / "slurmctld.log", log_out)
        shutil.rmtree(directory, ignore_errors=True)
