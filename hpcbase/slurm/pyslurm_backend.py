"""Optional backend: reads jobs through pyslurm (Slurm's C API) instead of squeue/scontrol.

pyslurm must match the installed Slurm's major.minor version (pyslurm 22.5.x for Slurm
22.05); submissions, cancels and partitions still go through the commands. PyPI's current
pyslurm builds only against Slurm 25.11, so this backend is not exercised against the
Slurm 22.05 used in this project's tests (see docs/slurm.md).
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType
from typing import Any

from hpcbase.slurm.client import CliClient
from hpcbase.slurm.errors import SlurmError, SlurmUnavailable
from hpcbase.slurm.models import JobInfo

_INFINITE32 = 0xFFFFFFFF


def load_pyslurm(slurm_version: tuple[int, int]) -> ModuleType:
    """Import pyslurm and check it was built for ``slurm_version``; SlurmError says why not."""
    try:
        mod = importlib.import_module("pyslurm")
    except Exception as e:  # ImportError, or the C extension failing to load its libslurm
        raise SlurmError(
            f"the pyslurm backend needs pyslurm built for Slurm {slurm_version[0]}."
            f"{slurm_version[1]:02d} ({type(e).__name__}: {e}); use the 'cli' backend"
        ) from None
    have = _version_of(mod)
    if have is None or have != slurm_version:
        raise SlurmError(
            f"pyslurm {getattr(mod, '__version__', '?')} does not match the installed Slurm "
            f"{slurm_version[0]}.{slurm_version[1]:02d}; install the pyslurm release for "
            "this Slurm or use the 'cli' backend"
        )
    if not hasattr(mod, "Jobs") or not hasattr(mod, "Job"):
        raise SlurmError(
            f"pyslurm {getattr(mod, '__version__', '?')} lacks the Jobs/Job API "
            "(pyslurm >= 23.2); use the 'cli' backend"
        )
    return mod


def _version_of(mod: ModuleType) -> tuple[int, int] | None:
    """pyslurm versions follow Slurm's: 22.5.1 is for Slurm 22.05."""
    text = str(getattr(mod, "__version__", ""))
    m = re.match(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _time(v: Any) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if 0 < v < _INFINITE32 else None


def _limit_seconds(minutes: Any) -> int | None:
    if minutes is None:
        return None
    m = int(minutes)
    return m * 60 if 0 <= m < _INFINITE32 - 1 else None


def job_from_pyslurm(j: Any) -> JobInfo:
    """A :class:`JobInfo` from a ``pyslurm.Job`` (time_limit in minutes, times in s)."""
    state = str(j.state).split()[0].upper()
    pending = state == "PENDING"
    running = state in ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED")
    reason = j.state_reason
    deps = getattr(j, "dependencies", None)
    ec = getattr(j, "exit_code", None)
    sig = getattr(j, "exit_code_signal", None) or 0
    return JobInfo(
        id=int(j.id),
        name=j.name or "",
        user=j.user_name or "",
        state=state,
        nodes=int(j.num_nodes or 0),
        cpus=int(j.cpus or 0),
        time_limit=_limit_seconds(j.time_limit),
        submit=_time(j.submit_time),
        eligible=_time(j.eligible_time),
        start=None if pending else _time(j.start_time),
        end=None if (pending or running) else _time(j.end_time),
        reason=None if reason in (None, "None") else str(reason),
        dependency=_deps_text(deps),
        exit_code=(128 + int(sig)) if sig else (None if ec is None else int(ec)),
        comment=j.comment or None,
        partition=j.partition or None,
        uid=None if getattr(j, "user_id", None) is None else int(j.user_id),
        node_list=getattr(j, "nodes", None) or None,
    )


def _deps_text(deps: Any) -> str | None:
    """pyslurm gives dependencies as {"afterok": [1, 2], ...}; Slurm's text form back."""
    if not deps:
        return None
    if isinstance(deps, str):
        return deps
    parts = []
    for kind, ids in deps.items():
        if isinstance(ids, list | tuple) and ids:
            parts.append(f"{kind}:{':'.join(str(i) for i in ids)}")
        elif ids is True:
            parts.append(str(kind))
    return ",".join(parts) or None


class PyslurmClient(CliClient):
    """Reads jobs with pyslurm; everything else as :class:`CliClient`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pyslurm = load_pyslurm(self.version())

    def _rpc(self, fn: Any, *args: Any) -> Any:
        self.runner.calls["pyslurm"] += 1
        try:
            return fn(*args)
        except Exception as e:
            text = str(e)
            if re.search(r"Unable to contact|connect|timed out", text, re.IGNORECASE):
                raise SlurmUnavailable(f"pyslurm: {text}") from None
            raise SlurmError(f"pyslurm: {text}") from None

    def _fetch_recent(self) -> list[JobInfo]:
        return [job_from_pyslurm(j) for j in self._rpc(self.pyslurm.Jobs.load).values()]

    def _fetch_queue(self) -> list[JobInfo]:
        return [j for j in self._fetch_recent() if not j.finished]

    def _fetch_job(self, job_id: int) -> JobInfo | None:
        try:
            return job_from_pyslurm(self._rpc(self.pyslurm.Job.load, job_id))
        except SlurmUnavailable:
            raise
        except SlurmError as e:
            if "Invalid job id" not in str(e):
                raise
            return self._sacct_job(job_id)
