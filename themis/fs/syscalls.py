"""System calls the ``os`` module lacks: renameat2 (RENAME_NOREPLACE / RENAME_EXCHANGE)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)
if _renameat2 is not None:
    _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    _renameat2.restype = ctypes.c_int


def renameat2(old: bytes, new: bytes, flags: int) -> None:
    """rename(2) with flags; raises OSError with the kernel's errno."""
    if flags == 0:
        os.rename(old, new)
        return
    if _renameat2 is None:
        raise OSError(38, "renameat2 is not available")  # ENOSYS
    if _renameat2(AT_FDCWD, old, AT_FDCWD, new, flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), os.fsdecode(old), None, os.fsdecode(new))
