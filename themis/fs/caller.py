"""Who a FUSE request comes from: uid, gid and supplementary groups, for acting as the caller.

A request carries the caller's fsuid, fsgid and pid (a thread id), not its supplementary
groups; those come from ``/proc/PID/status``. The pid may already belong to another process
(the caller exited and the number was reused): the groups are used only when that file's
file-system uid and gid are the request's, else the caller acts with its primary group alone,
which can only deny, never grant, more than the kernel allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Caller:
    uid: int
    gid: int
    groups: tuple[int, ...]


def _ids(line: str) -> list[int]:
    return [int(x) for x in line.split(":", 1)[1].split()]


def caller_of(pid: int, uid: int, gid: int, proc: Path = Path("/proc")) -> Caller:
    """The credentials to act with for a request of ``pid`` with fsuid ``uid``/fsgid ``gid``."""
    if uid == 0 or pid <= 0:
        return Caller(uid, gid, ())
    try:
        text = (proc / str(pid) / "status").read_text()
    except OSError:
        return Caller(uid, gid, ())
    uids = gids = groups = None
    for line in text.splitlines():
        if line.startswith("Uid:"):
            uids = _ids(line)
        elif line.startswith("Gid:"):
            gids = _ids(line)
        elif line.startswith("Groups:"):
            groups = _ids(line)
    if not uids or not gids or groups is None or len(uids) < 4 or len(gids) < 4:
        return Caller(uid, gid, ())
    if uids[3] != uid or gids[3] != gid:  # field 4: the file-system id
        return Caller(uid, gid, ())
    return Caller(uid, gid, tuple(groups))
