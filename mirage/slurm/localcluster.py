"""Drive the local single-node cluster of ``scripts/slurm-cluster.sh`` from Python (tests,
benchmarks). Needs a source checkout, where the script lives."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
from pathlib import Path

from mirage.slurm.errors import SlurmError

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm-cluster.sh"
DAEMONS = ("slurmctld", "slurmd", "munged")
REQUIRED_PROGRAMS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol")


def missing_programs() -> list[str]:
    """Programs the local cluster needs that are not on PATH (empty when all are there)."""
    missing = [p for p in REQUIRED_PROGRAMS if shutil.which(p) is None]
    if not SCRIPT.is_file():
        missing.append(str(SCRIPT))
    return missing


def free_ports(n: int = 2) -> list[int]:
    """``n`` TCP ports nobody listens on now (chosen by the kernel)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


class LocalCluster:
    """One cluster of the script: its folder, ports and options.

    ``ports=None`` picks free ports, so several clusters (parallel test runs, a benchmark
    next to a developer's cluster) never collide.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        cpus: int = 16,
        conf_extra: str | Path | None = None,
        ports: tuple[int, int] | None = None,
    ) -> None:
        self.dir = Path(directory).resolve()
        self.cpus = int(cpus)
        self.conf_extra = Path(conf_extra).resolve() if conf_extra is not None else None
        self.ctld_port, self.slurmd_port = ports if ports is not None else free_ports(2)

    @property
    def conf_path(self) -> Path:
        return self.dir / "slurm.conf"

    @property
    def jobcomp_path(self) -> Path:
        """The jobcomp/filetxt log: one line per finished job."""
        return self.dir / "log" / "jobcomp.txt"

    @property
    def env(self) -> dict[str, str]:
        """Environment variables for Slurm commands aimed at this cluster; job output goes
        to ``<dir>/out`` unless a job names its own."""
        return {
            "SLURM_CONF": str(self.conf_path),
            "SBATCH_OUTPUT": str(self.dir / "out" / "slurm-%j.out"),
        }

    def _script(
        self, command: str, *extra: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        args = ["bash", str(SCRIPT), command, "--dir", str(self.dir), *extra]
        env = {
            **os.environ,
            "MIRAGE_SLURMCTLD_PORT": str(self.ctld_port),
            "MIRAGE_SLURMD_PORT": str(self.slurmd_port),
        }
        proc = subprocess.run(
            args, capture_output=True, text=True, env=env, timeout=timeout, stdin=subprocess.DEVNULL
        )
        if check and proc.returncode != 0:
            raise SlurmError(
                f"slurm-cluster.sh {command} failed (exit status {proc.returncode}):\n"
                f"{proc.stdout}{proc.stderr}".rstrip()
            )
        return proc

    def start(self) -> None:
        """Start whatever is not running and wait until the node is idle."""
        extra = ["--cpus", str(self.cpus)]
        if self.conf_extra is not None:
            extra += ["--conf-extra", str(self.conf_extra)]
        self._script("start", *extra)

    def stop(self, only: str | None = None) -> None:
        """Stop the cluster (cancelling its jobs), or only one daemon."""
        if only is not None and only not in DAEMONS:
            raise ValueError(f"only must be one of {DAEMONS}, got {only!r}")
        self._script("stop", *(["--only", only] if only else []))

    def stop_slurmctld(self) -> None:
        """Stop slurmctld alone (jobs and slurmd keep running); :meth:`start` brings it back
        with its saved state."""
        self.stop("slurmctld")

    def restart_slurmctld(self) -> None:
        self.stop_slurmctld()
        self.start()

    def running(self) -> bool:
        """Whether all three daemons run."""
        return self._script("status", check=False).returncode == 0

    def render_conf(self) -> str:
        """The slurm.conf ``start`` writes for these options, without starting anything."""
        extra = ["--cpus", str(self.cpus)]
        if self.conf_extra is not None:
            extra += ["--conf-extra", str(self.conf_extra)]
        return self._script("render", *extra).stdout

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(SlurmError, subprocess.TimeoutExpired):
            self.stop()
