"""Where a user's chain state lives: ``$MIRAGE_STATE_DIR`` or ``$XDG_STATE_HOME/mirage``."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir(override: str | Path | None = None) -> Path:
    """The state directory (created, mode 0700)."""
    if override:
        d = Path(override)
    elif os.environ.get("MIRAGE_STATE_DIR"):
        d = Path(os.environ["MIRAGE_STATE_DIR"])
    else:
        base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        d = Path(base) / "mirage"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def chain_dir(root: Path, chain_id: str) -> Path:
    """A chain's own folder: its watcher's lock and log, the segments' marker files."""
    d = root / "chains" / chain_id
    d.mkdir(parents=True, exist_ok=True)
    return d


def done_marker(root: Path, chain_id: str, segment: int) -> Path:
    """The file that appears once segment ``segment`` has ended (successors may wait on it)."""
    return root / "chains" / chain_id / f"segment-{segment}.done"
