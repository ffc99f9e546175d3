"""Tune the kernel side of a FUSE connection through fusectl (/sys/fs/fuse/connections).

The kernel lets at most ``max_background`` asynchronous requests (readahead, writeback) reach the
daemon at once (default 12) and queues the rest itself, in arrival order. A fair scheduler can
only reorder what reaches it, so the proxy raises the limit. libfuse 3.14 through pyfuse3 offers
no way to set it at INIT, hence fusectl.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

FUSECTL = Path("/sys/fs/fuse/connections")


def _ensure_fusectl() -> bool:
    if not FUSECTL.is_dir():
        return False
    if any(FUSECTL.iterdir()):
        return True
    # not mounted yet (systemd normally does it at boot: sys-fs-fuse-connections.mount)
    done = subprocess.run(["mount", "-t", "fusectl", "fusectl", str(FUSECTL)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        log.warning("cannot mount fusectl on %s: %s", FUSECTL, done.stderr.strip())
        return False
    return True


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def connection_id(mountpoint: str, mountinfo: str = "/proc/self/mountinfo") -> int | None:
    """The FUSE connection number (the device minor) of a mount, read from mountinfo.

    Not ``os.stat(mountpoint)``: from inside the daemon that would wait for ourselves.
    """
    target = os.path.abspath(mountpoint)
    found = None
    with open(mountinfo) as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4 and _unescape(fields[4]) == target:
                found = int(fields[2].split(":")[1])  # the last mount on top wins
    return found


def tune(mountpoint: str, max_background: int) -> bool:
    """Set max_background (and congestion_threshold = 3/4 of it) of the mount's connection."""
    if max_background <= 0 or not _ensure_fusectl():
        return False
    minor = connection_id(mountpoint)
    if minor is None:
        log.warning("%s is not in /proc/self/mountinfo; FUSE limits left alone", mountpoint)
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
