"""Helpers for Themis tests: a real ``themis mount`` daemon (:mod:`themis.launch`) with its
metrics at hand; the shared helpers they use are re-exported for the tests."""

from __future__ import annotations

import errno
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from hpcbase.asuser import run_as, user_python
from hpcbase.netutil import free_port
from themis.fs.fusectl import is_mounted
from themis.launch import FuseDaemon, answers_http, scrape, themis_command

__all__ = [
    "REPO",
    "ThemisMount",
    "free_port",
    "fuse_available",
    "is_mounted",
    "run_as",
    "start_themis",
    "user_python",
]

REPO = Path(__file__).resolve().parents[2]


def fuse_available() -> str | None:
    """None when real FUSE mounts can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root"
    if not os.path.exists("/dev/fuse"):
        return "needs /dev/fuse"
    if shutil.which("fusermount3") is None:
        return "needs fusermount3 (fuse3)"
    if importlib.util.find_spec("pyfuse3") is None:
        return "needs pyfuse3 (pip install '.[fuse]')"
    return None


@dataclass
class ThemisMount:
    """A running daemon: ``backing`` served on ``mnt``; metrics on ``port``."""

    backing: Path
    mnt: Path
    port: int
    daemon: FuseDaemon
    log: Path
    config: Path | None = None
    extra: list[str] = field(default_factory=list)

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        return self.daemon.proc

    def scrape(self) -> str:
        return scrape(self.port)

    def sample(self, name: str, **labels: str) -> float | None:
        """The value of one series in a fresh scrape (None when absent)."""
        want = {f'{k}="{v}"' for k, v in labels.items()}
        for line in self.scrape().splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                head, _, value = line.rpartition(" ")
                labels = head[head.find("{") + 1 : head.rfind("}")]
                got = set(labels.split(",")) if "{" in head else set()
                if want <= got:
                    return float(value)
        return None

    def logs(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def signal(self, sig: int) -> None:
        self.daemon.signal(sig)

    def stop(self) -> int | None:
        return self.daemon.stop()


def start_themis(
    root: Path,
    *args: str,
    backing: Path | None = None,
    config: Path | None = None,
    wait: float = 20.0,
    env: dict[str, str] | None = None,
) -> ThemisMount:
    """Start ``themis mount`` in the foreground and wait until the mount and its metrics
    endpoint are live."""
    backing = backing or root / "backing"
    mnt = root / "mnt"
    backing.mkdir(exist_ok=True)
    try:
        mnt.mkdir()
    except FileExistsError:
        pass
    except OSError as exc:  # a dead mount of a killed daemon: the daemon clears it
        if exc.errno != errno.ENOTCONN:
            raise
    port = free_port()
    log = root / f"themis-{port}.log"
    cmd = themis_command(backing, mnt, *args, config=config, metrics_port=port, log_file=log)
    full = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    daemon = FuseDaemon(
        cmd,
        mnt,
        root / f"themis-{port}.console",
        env=full,
        cwd=REPO,
        wait=wait,
        ready=answers_http(port),
        logs=[log],
    )
    return ThemisMount(backing, mnt, port, daemon, log, config, list(args))
