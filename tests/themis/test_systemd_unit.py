"""The systemd unit: hardened, yet without a private mount namespace; verified by systemd."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "themis.service"

# each of these makes systemd run the service in its own mount namespace: the FUSE mount
# would then be invisible to the jobs on the node
NAMESPACING = (
    "PrivateMounts",
    "ProtectSystem",
    "ProtectHome",
    "PrivateTmp",
    "PrivateDevices",
    "ProtectKernelTunables",
    "ProtectKernelModules",
    "ProtectKernelLogs",
    "ProtectControlGroups",
    "ProtectProc",
    "ReadOnlyPaths",
    "InaccessiblePaths",
    "TemporaryFileSystem",
    "BindPaths",
    "RootDirectory",
    "MountFlags",
)


def directives() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    text = UNIT.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "[")) and "=" in line:
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(" ".join(value.split()))
    return out


def test_hardened_but_keeps_mount_rights():
    d = directives()
    assert d["NoNewPrivileges"] == ["yes"]
    assert "/dev/fuse rw" in d["DeviceAllow"]
    assert d["DevicePolicy"] == ["closed"]
    assert "CAP_SYS_ADMIN" in d["CapabilityBoundingSet"][0]
    assert "@mount" in d["SystemCallFilter"][0]
    assert d["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert d["KillSignal"] == ["SIGTERM"]
    assert "--foreground" in d["ExecStart"][0] and "/etc/themis/themis.toml" in d["ExecStart"][0]
    assert not [key for key in NAMESPACING if key in d]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_analyze_verify(tmp_path):
    themis = Path(sys.executable).parent / "themis"
    if not themis.exists():
        pytest.skip("the themis console script is not installed next to this Python")
    unit = tmp_path / "themis.service"
    unit.write_text(UNIT.read_text().replace("/opt/mirage-themis/.venv/bin/themis", str(themis)))
    out = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    problems = [line for line in (out.stdout + out.stderr).splitlines() if "themis.service" in line]
    assert out.returncode == 0 and not problems, out.stdout + out.stderr
