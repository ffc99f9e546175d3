"""Start a FUSE daemon process (``themis mount``, or another file system such as a benchmark's
yardstick), wait until its mount is live, and stop it: for the tests, the benchmarks and
scripts that run a mount of their own. systemd runs the real daemon (``systemd/``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from themis.fs.fusectl import is_mounted


def themis_command(
    backing: Path,
    mountpoint: Path,
    *args: str,
    config: Path | None = None,
    metrics_port: int | None = None,
    log_file: Path | None = None,
) -> list[str]:
    """The command line of a foreground ``themis mount`` with this interpreter."""
    cmd = [sys.executable, "-m", "themis.cli", "mount", str(backing), str(mountpoint)]
    cmd.append("--foreground")
    if config is not None:
        cmd += ["--config", str(config)]
    if metrics_port is not None:
        cmd += ["--metrics-port", str(metrics_port)]
    if log_file is not None:
        cmd += ["--log-file", str(log_file)]
    return [*cmd, *args]


def without_slurm(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` less the ``SLURM_*`` variables (a daemon started inside a job must not take
    that job for its own)."""
    return {k: v for k, v in env.items() if not k.startswith("SLURM_")}


class FuseDaemon:
    """One FUSE daemon process serving ``mountpoint``; its stdout and stderr go to
    ``console``. The constructor returns once the mount is live and ``ready()`` (if given)
    holds, and raises RuntimeError with the daemon's output if it exits or ``wait`` passes
    first."""

    def __init__(
        self,
        cmd: Sequence[str],
        mountpoint: Path,
        console: Path,
        *,
        what: str = "themis mount",
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        wait: float = 30.0,
        ready: Callable[[], bool] | None = None,
        logs: Sequence[Path] = (),
    ) -> None:
        self.mountpoint = Path(mountpoint)
        self.console = Path(console)
        self.what = what
        self.logs = list(logs)
        with open(self.console, "wb") as out:
            self.proc = subprocess.Popen(
                list(cmd),
                env=dict(os.environ if env is None else env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + wait
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(self.failure(f"exited with status {self.proc.returncode}"))
            if is_mounted(self.mountpoint) and (ready is None or ready()):
                return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(self.failure(f"did not come up in {wait:g} s"))
            time.sleep(0.05)

    def output(self) -> str:
        """The console output and every log file, as text."""
        parts = []
        for path in (self.console, *self.logs):
            if path.exists():
                parts.append(path.read_text(errors="replace").strip())
        return "\n".join(p for p in parts if p) or "(no output)"

    def failure(self, why: str) -> str:
        return f"{self.what} on {self.mountpoint} {why}:\n{self.output()}"

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; a mount left behind is detached."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if is_mounted(self.mountpoint):
            subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], check=False)
        return self.proc.returncode


def scrape(port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> str:
    """The text of a metrics endpoint."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout) as r:
        return str(r.read().decode())


def answers_http(port: int) -> Callable[[], bool]:
    """A ``ready`` check: the metrics endpoint on ``port`` answers."""

    def check() -> bool:
        try:
            scrape(port, timeout=2.0)
        except OSError:
            return False
        return True

    return check
