"""Open a trace file: check it exists and is text, undo gzip/bzip2/xz, decode it."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import zlib
from pathlib import Path

from sim.traces.model import TraceError

_MAGIC = (
    (b"\x1f\x8b", "gzip", gzip.decompress),
    (b"BZh", "bzip2", bz2.decompress),
    (b"\xfd7zXZ\x00", "xz", lzma.decompress),
)
_SNIFF = 65536


def load_text(path: str | os.PathLike[str]) -> str:
    """The text of the trace at ``path``, decompressed and decoded.

    Raises :class:`TraceError` (never ``OSError``) for a missing file, a directory, an
    unreadable, empty, corrupt-compressed or binary file.
    """
    return decode(load_raw(path), str(path))


def load_raw(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the file at ``path`` as stored (still compressed); TraceError if none."""
    p = Path(path)
    name = str(path)
    if not p.exists():
        raise TraceError(f"{name}: no such file")
    if p.is_dir():
        raise TraceError(f"{name}: is a directory, not a trace file")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise TraceError(f"{name}: cannot read: {exc.strerror or exc}") from None


def decode(raw: bytes, name: str) -> str:
    """The text of a trace file's bytes: decompressed, checked to be text, decoded."""
    for magic, kind, decompress in _MAGIC:
        if raw.startswith(magic):
            try:
                raw = decompress(raw)
            except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
                raise TraceError(f"{name}: corrupt {kind} data: {exc}") from None
            break
    if not raw.strip():
        raise TraceError(f"{name}: empty file, no jobs")
    head = raw[:_SNIFF]
    if b"\x00" in head or _control_ratio(head) > 0.05:
        raise TraceError(f"{name}: binary data, not a text trace (SWF, sacct export or CSV)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return text.lstrip("\ufeff")


def _control_ratio(data: bytes) -> float:
    """Share of bytes that are control characters other than TAB, CR, LF, FF."""
    if not data:
        return 0.0
    bad = sum(data.count(bytes([c])) for c in range(32) if c not in (9, 10, 12, 13))
    bad += data.count(b"\x7f")
    return bad / len(data)
