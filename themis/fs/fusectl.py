"""The kernel side of FUSE connections, through mountinfo and fusectl (/sys/fs/fuse/connections).

* Tuning: the kernel lets at most ``max_background`` asynchronous requests (readahead,
  writeback) reach the daemon at once (default 12) and queues the rest itself, in arrival order.
  A fair scheduler can only reorder what reaches it, so the proxy raises the limit. libfuse 3.14
  through pyfuse3 offers no way to set it at INIT, hence fusectl.
* Dead mounts: a daemon killed hard leaves its mount in place. Whether a mount point holds a
  FUSE mount is read from ``/proc/self/mountinfo`` (never from ``stat``, which the kernel may
  answer from its attribute cache for a second after the daemon died); whether its daemon is
  gone from ``statfs``, which the kernel always forwards and fails with ENOTCONN on a dead
  connection. A dead one is aborted through fusectl and detached (:func:`clear_dead_mounts`).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import subprocess
import threading
from pathlib import Path

log = logging.getLogger(__name__)

FUSECTL = Path("/sys/fs/fuse/connections")


def _ensure_fusectl() -> bool:
    if not FUSECTL.is_dir():
        return False
    if any(FUSECTL.iterdir()):
        return True
    # not mounted yet (systemd normally does it at boot: sys-fs-fuse-connections.mount)
    done = subprocess.run(
        ["mount", "-t", "fusectl", "fusectl", str(FUSECTL)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        log.warning("cannot mount fusectl on %s: %s", FUSECTL, done.stderr.strip())
        return False
    return True


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def fuse_mounts(mountpoint: str, mountinfo: str = "/proc/self/mountinfo") -> list[int]:
    """Connection numbers (device minors) of the FUSE mounts on ``mountpoint``, bottom first."""
    target = os.path.abspath(mountpoint)
    found = []
    with open(mountinfo) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 10 or _unescape(fields[4]) != target:
                continue
            fstype = fields[fields.index("-") + 1] if "-" in fields else ""
            if fstype == "fuse" or fstype.startswith(("fuse.", "fuseblk")):
                found.append(int(fields[2].split(":")[1]))
    return found


def is_mounted(mountpoint: str | os.PathLike[str]) -> bool:
    """Whether a FUSE mount, live or dead, sits on ``mountpoint`` (from mountinfo)."""
    return bool(fuse_mounts(os.path.realpath(mountpoint)))


def connection_id(mountpoint: str, mountinfo: str = "/proc/self/mountinfo") -> int | None:
    """The FUSE connection number (the device minor) of a mount, read from mountinfo.

    Not ``os.stat(mountpoint)``: from inside the daemon that would wait for ourselves.
    """
    mounts = fuse_mounts(mountpoint, mountinfo)
    return mounts[-1] if mounts else None  # the last mount on top wins


def answers(mountpoint: str, timeout: float = 5.0) -> bool | None:
    """True if the daemon of the top mount answers statfs, False if the connection is dead
    (ENOTCONN, ECONNABORTED), None if it did not answer within ``timeout``."""
    result: list[bool] = []

    def probe() -> None:
        try:
            os.statvfs(mountpoint)
            result.append(True)
        except OSError as exc:
            result.append(exc.errno not in (errno.ENOTCONN, errno.ECONNABORTED))

    # a hung daemon would block statfs: probe in a daemon thread
    thread = threading.Thread(target=probe, name="themis-statfs-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    return result[0] if result else None


def abort(minor: int) -> bool:
    """Abort a FUSE connection: every waiting and future request fails at once."""
    if not _ensure_fusectl():
        return False
    try:
        (FUSECTL / str(minor) / "abort").write_text("1\n")
    except OSError as exc:
        log.warning("cannot abort FUSE connection %d: %s", minor, exc)
        return False
    return True


def clear_dead_mounts(mountpoint: str) -> int:
    """Remove dead FUSE mounts from ``mountpoint`` (top first); returns how many.

    Raises RuntimeError when the top mount's daemon still answers (a live mount is not ours
    to remove) or does not answer at all (hung: left for the administrator).
    """
    from themis.fs.syscalls import umount_detach

    cleared = 0
    while minors := fuse_mounts(mountpoint):
        alive = answers(mountpoint)
        if alive:
            raise RuntimeError(
                f"{mountpoint} is already served by a running FUSE daemon (connection {minors[-1]})"
            )
        if alive is None:
            raise RuntimeError(
                f"the FUSE daemon of {mountpoint} (connection {minors[-1]}) does "
                "not answer; unmount it with 'fusermount3 -u -z' first"
            )
        log.warning(
            "%s: clearing the dead FUSE mount of a previous daemon (connection %d)",
            mountpoint,
            minors[-1],
        )
        abort(minors[-1])
        umount_detach(mountpoint)
        cleared += 1
    return cleared


def tune(mountpoint: str, max_background: int, read_ahead_kb: int = 0) -> bool:
    """Set max_background (and congestion_threshold = 3/4 of it) of the mount's connection,
    and its readahead window when ``read_ahead_kb`` > 0 (FUSE reads are at most 1 MiB)."""
    minor = connection_id(mountpoint)
    if minor is None:
        log.warning("%s is not in /proc/self/mountinfo; FUSE limits left alone", mountpoint)
        return False
    if read_ahead_kb > 0:
        bdi = Path(f"/sys/class/bdi/0:{minor}/read_ahead_kb")
        try:
            bdi.write_text(f"{read_ahead_kb}\n")
        except OSError as exc:
            log.warning("cannot set %s: %s", bdi, exc)
    if max_background <= 0 or not _ensure_fusectl():
        return False
    conn = FUSECTL / str(minor)
    try:
        (conn / "max_background").write_text(f"{max_background}\n")
        (conn / "congestion_threshold").write_text(f"{max(1, max_background * 3 // 4)}\n")
    except OSError as exc:
        log.warning("cannot tune FUSE connection %s: %s", conn, exc)
        return False
    log.info("FUSE connection %s: max_background %d", conn.name, max_background)
    return True
