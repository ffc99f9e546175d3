"""Helpers for Themis tests: start a real ``themis mount`` daemon, run code as other uids."""

from __future__ import annotations

import errno
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def user_python() -> str:
    """A Python other uids may execute (the project's venv may sit under a private home)."""
    for candidate in ("/usr/bin/python3", shutil.which("python3") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def run_as(
    uid: int,
    code: str,
    gid: int | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run Python ``code`` (stdlib only) as ``uid``/``gid`` with exactly ``env``."""
    return subprocess.run(
        [user_python(), "-c", code],
        user=uid,
        group=uid if gid is None else gid,
        extra_groups=[],
        env=env if env is not None else {"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
    )


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_mounted(path: str | Path) -> bool:
    target = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == target and line.split()[2].startswith("fuse") for line in f)


@dataclass
class ThemisMount:
    """A running daemon: ``backing`` served on ``mnt``; metrics on ``port``."""

    backing: Path
    mnt: Path
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    config: Path | None = None
    extra: list[str] = field(default_factory=list)

    def scrape(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            return r.read().decode()

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
        self.proc.send_signal(sig)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], check=False)
        return self.proc.returncode


def start_themis(
    root: Path,
    *args: str,
    backing: Path | None = None,
    config: Path | None = None,
    wait: float = 20.0,
    env: dict[str, str] | None = None,
) -> ThemisMount:
    """Start ``themis mount`` in the foreground and wait until the mount is live."""
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
    cmd = [
        sys.executable,
        "-m",
        "themis.cli",
        "mount",
        str(backing),
        str(mnt),
        "--foreground",
        "--metrics-port",
        str(port),
        "--log-file",
        str(log),
        *args,
    ]
    if config is not None:
        cmd += ["--config", str(config)]
    full = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    proc = subprocess.Popen(cmd, env=full, cwd=REPO, stdin=subprocess.DEVNULL)
    mount = ThemisMount(backing, mnt, port, proc, log, config, list(args))
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"themis mount exited with {proc.returncode}:\n{mount.logs()}")
        if is_mounted(mnt):
            try:
                mount.scrape()
                return mount
            except OSError:
                pass
        time.sleep(0.05)
    mount.stop()
    raise RuntimeError(f"themis mount did not come up in {wait} s:\n{mount.logs()}")
