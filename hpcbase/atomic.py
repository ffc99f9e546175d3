"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Every package writes its state, results and markers through these two functions: a temporary
file in the target's folder (``.NAME.XXXXXX.tmp``, so that ``os.replace`` stays on one file
system), flushed to disk, given its final mode, renamed over the target, and removed again if
anything fails on the way.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(
    path: str | os.PathLike[str], *, mode: int = 0o644, suffix: str = ".tmp", fsync: bool = True
) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; write it, and on a clean exit it replaces
    ``path`` (``mode`` applied, data and folder synced when ``fsync``). ``suffix`` is the
    temporary file's ending, for writers that pick the format from it (``.png``)."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, mode)
        if fsync:
            _fsync(tmp, os.O_RDONLY)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if fsync:
        with contextlib.suppress(OSError):  # not every file system syncs a folder
            _fsync(path.parent, os.O_RDONLY | os.O_DIRECTORY)


def atomic_write(
    path: str | os.PathLike[str], data: str | bytes, *, mode: int = 0o644, fsync: bool = True
) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8) atomically."""
    with atomic_path(path, mode=mode, fsync=fsync) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
