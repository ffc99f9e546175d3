"""Per-user limits of a QOS, as a site sets them with ``sacctmgr`` (they live in Slurm's
accounting database, not in ``slurm.conf``).

The simulator takes one set of limits that applies to every job (the site's default QOS,
``normal``): ``QosLimits(...)`` on the Python API, or a small file for ``hpcsim replay
--qos-limits FILE``, with ``sacctmgr``'s own names as ``Key=Value`` pairs (several per line,
``#`` comments)::

    # sacctmgr modify qos normal set MaxJobsPerUser=4 MaxTRESPerUser=node=8
    MaxJobsPerUser=4 MaxTRESPerUser=node=8,cpu=512
    MaxSubmitJobsPerUser=50

A value of ``-1`` clears a limit, as in ``sacctmgr``. Unknown keys are errors (a typo would
otherwise silently drop a limit).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hpcbase.config import ConfigError, read_config

#: a user's own limits: (user, running jobs, nodes, CPUs), ``None`` for no limit
UserLimit = tuple[int, int | None, int | None, int | None]
#: the running jobs, nodes and CPUs a user is held to, ``None`` for no limit
Caps = tuple[int | None, int | None, int | None]

#: Slurm's pending reasons for the limits (``squeue -o %r``).
REASON_JOBS = "QOSMaxJobsPerUserLimit"
REASON_NODES = "QOSMaxNodePerUserLimit"
REASON_CPUS = "QOSMaxCpuPerUserLimit"
REASON_SUBMIT = "QOSMaxSubmitJobPerUserLimit"


@dataclass(frozen=True, slots=True)
class QosLimits:
    """Per-user limits; ``None`` is no limit.

    ``max_jobs_per_user``: running jobs (``MaxJobsPerUser``); ``max_nodes_per_user`` /
    ``max_cpus_per_user``: nodes / CPUs held by running jobs (``MaxTRESPerUser=node=N`` /
    ``cpu=N``); ``max_submit_jobs_per_user``: pending plus running jobs at submission
    (``MaxSubmitJobsPerUser``; a job over it is rejected); ``user_limits``: users under
    another QOS with higher limits of their own."""

    max_jobs_per_user: int | None = None
    max_nodes_per_user: int | None = None
    max_cpus_per_user: int | None = None
    max_submit_jobs_per_user: int | None = None
    #: a job larger than ``max_nodes_per_user`` on its own runs under another QOS without
    #: that cap (a log fitted by sim/fit.py shows such jobs ran); otherwise Slurm keeps
    #: it pending for ever
    larger_jobs_exempt: bool = False
    #: users whose running jobs, nodes and CPUs are held to limits of their own, where
    #: higher than these: (user, jobs, nodes, CPUs) by user, ``None`` for no limit (a log
    #: fitted by sim/fit.py shows them running past the limits every other user kept, so
    #: their own limits are their recorded maxima). The submit limit is the QOS's.
    user_limits: tuple[UserLimit, ...] = ()

    def __post_init__(self) -> None:
        users = [u[0] for u in self.user_limits]
        if users != sorted(set(users)) or any(
            len(u) != 4 or u[0] < 0 or any(v is not None and v < 0 for v in u[1:])
            for u in self.user_limits
        ):
            raise ValueError(
                "user_limits: (user, jobs, nodes, CPUs) entries by distinct user expected, "
                "each limit >= 0 or None"
            )

    def caps(self, user: int) -> Caps:
        """The running jobs, nodes and CPUs ``user`` is held to (``None``: no limit): the
        QOS's, or the user's own where higher."""
        qos = (self.max_jobs_per_user, self.max_nodes_per_user, self.max_cpus_per_user)
        for entry in self.user_limits:
            if entry[0] == user:
                return _higher(qos, (entry[1], entry[2], entry[3]))
        return qos

    def with_user_limits(self, own: dict[int, Caps]) -> QosLimits:
        """These limits with ``own`` (user -> jobs, nodes, CPUs) added; a user already
        listed keeps the higher of each."""
        merged = {u[0]: (u[1], u[2], u[3]) for u in self.user_limits}
        for user, caps in own.items():
            was = merged.get(user)
            merged[user] = caps if was is None else _higher(was, caps)
        return replace(self, user_limits=tuple((u, *merged[u]) for u in sorted(merged)))

    def user_limits_text(self, names: Sequence[str] = ()) -> str:
        """The users with limits of their own, by their ``names`` (a trace's
        ``user_names``, indexed by user number) where given, for a note ("" when none)."""
        if not self.user_limits:
            return ""
        shown = []
        qos = (self.max_jobs_per_user, self.max_nodes_per_user, self.max_cpus_per_user)
        for user, *_ in self.user_limits[:5]:
            name = names[user] if user < len(names) else str(user)
            parts = [
                f"{'no' if v is None else v} {what}"
                for v, what, q in zip(self.caps(user), ("jobs", "nodes", "CPUs"), qos, strict=True)
                if q is not None and v != q
            ]
            shown.append(f"{name} at {', '.join(parts)}" if parts else name)
        more = ", ..." if len(self.user_limits) > 5 else ""
        return f"user{'s' if len(self.user_limits) > 1 else ''} {'; '.join(shown)}{more}"

    def changes_from(self, before: QosLimits | None, names: Sequence[str] = ()) -> str:
        """What these limits change from ``before`` (a limit step), for a note: the QOS's
        limits where they differ, and the users whose own limits are new or higher."""
        qos = self.to_text() if before is None or self.to_text() != before.to_text() else ""
        was = set(before.user_limits) if before is not None else set()
        own = replace(self, user_limits=tuple(u for u in self.user_limits if u not in was))
        users = own.user_limits_text(names)
        return "; ".join(p for p in (qos, users) if p) or "no change"

    @property
    def any(self) -> bool:
        """Whether any limit is set."""
        return any(
            v is not None
            for v in (
                self.max_jobs_per_user,
                self.max_nodes_per_user,
                self.max_cpus_per_user,
                self.max_submit_jobs_per_user,
            )
        )

    @property
    def run_limited(self) -> bool:
        """Whether a limit on running jobs is set (the schedulers check those)."""
        return any(
            v is not None
            for v in (self.max_jobs_per_user, self.max_nodes_per_user, self.max_cpus_per_user)
        )

    @classmethod
    def from_file(cls, path: str | Path) -> QosLimits:
        return cls.from_text(read_config(path, "QOS limits file"), str(path))

    @classmethod
    def from_text(cls, text: str, name: str = "<qos limits>") -> QosLimits:
        """``Key=Value`` pairs (see the module's docstring); errors name ``name``:line."""
        values: dict[str, int | None] = {}
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            where = f"{name}:{lineno}"
            try:
                tokens = shlex.split(line)
            except ValueError as e:
                raise ConfigError(f"{where}: {e}") from None
            for tok in tokens:
                key, eq, value = tok.partition("=")
                if not eq:
                    raise ConfigError(f"{where}: expected Key=Value, got {tok!r}")
                _apply(values, key.strip(), value.strip(), where)
        return cls(**values)  # type: ignore[arg-type]  # the int fields only

    def to_text(self) -> str:
        """The limits as ``sacctmgr`` ``Key=Value`` pairs (what :meth:`from_text` reads)."""
        pairs = []
        if self.max_jobs_per_user is not None:
            pairs.append(f"MaxJobsPerUser={self.max_jobs_per_user}")
        tres = [
            f"{k}={v}"
            for k, v in (("node", self.max_nodes_per_user), ("cpu", self.max_cpus_per_user))
            if v is not None
        ]
        if tres:
            pairs.append("MaxTRESPerUser=" + ",".join(tres))
        if self.max_submit_jobs_per_user is not None:
            pairs.append(f"MaxSubmitJobsPerUser={self.max_submit_jobs_per_user}")
        return " ".join(pairs)


_SIMPLE = {
    "maxjobsperuser": "max_jobs_per_user",
    "maxsubmitjobsperuser": "max_submit_jobs_per_user",
}
_TRES = {"node": "max_nodes_per_user", "cpu": "max_cpus_per_user"}


def _higher(a: Caps, b: Caps) -> Caps:
    """Each of two sets of limits' higher (``None``: no limit, the highest)."""
    return (
        None if a[0] is None or b[0] is None else max(a[0], b[0]),
        None if a[1] is None or b[1] is None else max(a[1], b[1]),
        None if a[2] is None or b[2] is None else max(a[2], b[2]),
    )


def _count(value: str, where: str, key: str) -> int | None:
    try:
        n = int(value)
    except ValueError:
        raise ConfigError(f"{where}: {key}: expected a whole number, got {value!r}") from None
    if n < -1:
        raise ConfigError(f"{where}: {key}: must be >= 0 (or -1: no limit), got {n}")
    return None if n == -1 else n


def _apply(values: dict[str, int | None], key: str, value: str, where: str) -> None:
    k = key.lower()
    if k in _SIMPLE:
        values[_SIMPLE[k]] = _count(value, where, key)
    elif k == "maxtresperuser":
        for item in value.split(","):
            tres, eq, n = item.strip().partition("=")
            field = _TRES.get(tres.lower())
            if not eq or field is None:
                raise ConfigError(
                    f"{where}: {key}: expected node=N and/or cpu=N, got {item.strip()!r}"
                )
            values[field] = _count(n, where, f"{key} {tres}")
    else:
        raise ConfigError(
            f"{where}: unknown limit {key!r} (known: MaxJobsPerUser, MaxTRESPerUser, "
            "MaxSubmitJobsPerUser)"
        )


def checked_limit_steps(
    first: QosLimits | None, steps: Sequence[tuple[float, QosLimits]]
) -> list[tuple[float, QosLimits]]:
    """``steps`` (time, limits from then on) in time order, checked against the limits
    held first: a step may change the limits on running jobs, not whether there are any
    (the per-user counts are kept only where there are), nor the submit limit."""
    out = sorted((float(t), lim) for t, lim in steps)
    run_limited = first is not None and first.run_limited
    submit = first.max_submit_jobs_per_user if first is not None else None
    for t, lim in out:
        if lim.run_limited != run_limited or lim.max_submit_jobs_per_user != submit:
            raise ValueError(
                f"limit step at t={t:g}: {lim.to_text() or 'no limits'} must keep limits on "
                f"running jobs, and the submit limit, as the first limits "
                f"({first.to_text() if first is not None else 'none'})"
            )
    return out
