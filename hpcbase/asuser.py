"""Run code as another user: the way tests and benchmarks play a site's unprivileged users."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def user_python() -> str:
    """A Python that other uids may execute (a project's venv may sit under a private home)."""
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
    """Run Python ``code`` (stdlib only) as ``uid``/``gid`` with exactly ``env`` (needs root)."""
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
