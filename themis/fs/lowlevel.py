"""pyfuse3's libfuse operation table: where the compiled data path and ``fallocate`` go in.

pyfuse3 3.5 fills libfuse's ``struct fuse_lowlevel_ops`` inside :func:`pyfuse3.init` and hands
it to ``fuse_session_new``, which keeps its own copy in the session. Right after
``pyfuse3.init`` we put a callback into the ``fallocate`` slot of the session's copy. The
session pointer comes from pyfuse3's ELF symbol table; the slot's place from libfuse 3's
header (slot 40 of the table, ``fh`` at byte 16 of ``struct fuse_file_info``). The table is
recognised by its contents: nothing is written unless slots 2, 38 and 41 hold exactly pyfuse3's
own ``lookup``, ``forget_multi`` and ``readdirplus`` handlers, so another pyfuse3 or libfuse
build leaves ``fallocate`` unanswered (the kernel then reports EOPNOTSUPP, as before) with a
warning, rather than corrupting anything.

:func:`op_table` finds the session and table for the compiled data path
(themis/fs/datapath.py), which wraps ``init`` there (kernel options) and takes ``/dev/fuse``
over; :func:`install_fallocate` serves fallocate
alone for the Python data path. Its callback runs on the event loop thread inside pyfuse3's
request processing and answers at once with ``fuse_reply_err`` (0 on success).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger("themis.fs")

_SLOT = 8  # bytes per function pointer
_SLOTS = {"lookup": 2, "forget_multi": 38, "fallocate": 40, "readdirplus": 41}
_FH_OFFSET = 16

Allocate = Callable[[int, int, int, int], int]  # (fh, mode, offset, length) -> errno

_CALLBACK = ctypes.CFUNCTYPE(
    None,
    ctypes.c_void_p,
    ctypes.c_uint64,
    ctypes.c_int,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_void_p,
)
_installed: list[Any] = []  # keeps the ctypes callback alive
_handler: list[Allocate] = []


def _symbols(path: Path, names: set[str]) -> dict[str, int]:
    """Values of some symbols of an ELF64 little-endian shared object's .symtab."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not an ELF64 little-endian file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
    ]
    found: dict[str, int] = {}
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        str_off = strtab[4]
        for pos in range(sh[4], sh[4] + sh[5], 24):
            st_name, _, _, _, st_value, _ = struct.unpack_from("<IBBHQQ", data, pos)
            end = data.index(b"\0", str_off + st_name)
            name = data[str_off + st_name : end].decode(errors="replace")
            if name in names:
                found[name] = st_value
    return found


_libfuse: list[ctypes.CDLL] = []


def _reply(req: int, err: int) -> None:
    if not _libfuse:
        lib = ctypes.CDLL(ctypes.util.find_library("fuse3") or "libfuse3.so.3")
        lib.fuse_reply_err.argtypes = [ctypes.c_void_p, ctypes.c_int]
        _libfuse.append(lib)
    _libfuse[0].fuse_reply_err(req, err)


def _fallocate(req: int, ino: int, mode: int, offset: int, length: int, fi: int) -> None:
    try:
        fh = ctypes.c_uint64.from_address(fi + _FH_OFFSET).value
        err = _handler[0](fh, mode, offset, length) if _handler else 38
    except Exception:  # noqa: BLE001 - a request must always be answered
        log.exception("fallocate failed; answering EIO")
        err = 5
    _reply(req, err)


class OpTable(NamedTuple):
    """pyfuse3's ``struct fuse_session *`` and the address of its operation table."""

    session: int
    address: int


def op_table() -> OpTable | None:
    """The FUSE session and its libfuse operation table (call right after ``pyfuse3.init``),
    or None, with a warning, when pyfuse3's layout is not the expected one."""
    import pyfuse3

    so = Path(pyfuse3.__file__)
    session = "__pyx_v_7pyfuse3_session"
    funcs = {f"__pyx_f_7pyfuse3_fuse_{n}": n for n in ("lookup", "forget_multi", "readdirplus")}
    try:
        syms = _symbols(so, {session, "PyInit_pyfuse3", *funcs})
        module = ctypes.CDLL(str(so))
        init = ctypes.cast(module.PyInit_pyfuse3, ctypes.c_void_p).value
        if init is None:
            raise ValueError("PyInit_pyfuse3 not found")
        bias = init - syms["PyInit_pyfuse3"]
        se = ctypes.c_void_p.from_address(bias + syms[session]).value
        if not se:
            raise ValueError("no FUSE session yet")
        want = {_SLOTS[slot]: bias + syms[sym] for sym, slot in funcs.items()}

        def table_at(offset: int) -> bool:
            return all(
                ctypes.c_void_p.from_address(se + offset + i * _SLOT).value == addr
                for i, addr in want.items()
            )

        # libfuse's struct fuse_session keeps its copy of the table a few fields in (32 bytes
        # in 3.14); find it by its contents rather than trusting a private layout
        offset = next((o for o in range(0, 256, _SLOT) if table_at(o)), None)
        if offset is None:
            raise ValueError("the session's operation table was not found")
    except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
        log.warning(
            "pyfuse3 %s has an unexpected layout (%s): its operation table is left alone",
            getattr(pyfuse3, "__version__", "?"),
            exc,
        )
        return None
    return OpTable(int(se), int(se + offset))


def install_fallocate(handler: Allocate) -> bool:
    """Answer FUSE fallocate requests with ``handler`` (the Python data path); call right
    after ``pyfuse3.init``."""
    _handler[:] = [handler]
    table = op_table()
    if table is None:
        log.warning("fallocate not passed through")
        return False
    if not _installed:
        _installed.append(_CALLBACK(_fallocate))
    slot = ctypes.c_void_p.from_address(table.address + _SLOTS["fallocate"] * _SLOT)
    slot.value = ctypes.cast(_installed[0], ctypes.c_void_p).value
    return True
