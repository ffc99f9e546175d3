"""Fixtures for Themis: a real ``themis mount`` daemon over a temporary backing directory."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.themis.fusehelp import ThemisMount, fuse_available, start_themis
from themis.fs.fusectl import is_mounted


@pytest.fixture
def fuse_root() -> Iterator[Path]:
    """A world-traversable scratch directory (tests switch to other uids inside it)."""
    why = fuse_available()
    if why:
        pytest.skip(f"real FUSE mount {why}")
    root = Path(tempfile.mkdtemp(prefix="themis-test-", dir="/tmp"))
    root.chmod(0o755)
    yield root
    if is_mounted(root / "mnt"):
        subprocess.run(["fusermount3", "-u", "-z", str(root / "mnt")], check=False)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def themis(fuse_root: Path) -> Iterator[ThemisMount]:
    """A mounted proxy (size-fair, lottery) over an empty backing directory."""
    mount = start_themis(fuse_root)
    yield mount
    mount.stop()
