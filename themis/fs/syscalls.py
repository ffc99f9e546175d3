"""System calls the ``os`` module lacks, through ctypes.

* ``openat2`` (Linux 5.6+) with ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS``
  for every name the kernel hands us; ``openat`` with ``O_NOFOLLOW`` where the kernel lacks it;
* ``renameat2`` (RENAME_NOREPLACE / RENAME_EXCHANGE) between directory descriptors;
* ``fchownat`` / ``utimensat`` with ``AT_EMPTY_PATH`` (change the inode an ``O_PATH``
  descriptor holds, symlinks included, with no name to resolve);
* ``fallocate`` and ``umount2``;
* per-thread credentials: ``setfsuid``/``setfsgid`` and the raw ``setgroups`` system call
  (glibc's ``setgroups`` changes every thread of the process; the raw call changes only the
  calling thread, like setfsuid).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import platform
import stat
from collections.abc import Iterator, Sequence

AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_SYMLINK_FOLLOW = 0x400
AT_EMPTY_PATH = 0x1000
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
MNT_DETACH = 2

_SYS_OPENAT2 = 437  # the same number on every architecture (added after the unification)
# (setgroups, setfsuid, setfsgid) per architecture
_CRED_SYSCALLS = {"x86_64": (116, 122, 123), "aarch64": (159, 151, 152)}

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.syscall.restype = ctypes.c_long
_renameat2 = getattr(_libc, "renameat2", None)
if _renameat2 is not None:
    _renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    _renameat2.restype = ctypes.c_int
_libc.fchownat.argtypes = [
    ctypes.c_int,
    ctypes.c_char_p,
    ctypes.c_uint,
    ctypes.c_uint,
    ctypes.c_int,
]
_libc.fallocate64.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _raise(name: bytes | str | None = None) -> None:
    err = ctypes.get_errno()
    raise OSError(err, os.strerror(err), os.fsdecode(name) if name else None)


def _probe_openat2() -> bool:
    how = _OpenHow(os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, 0, RESOLVE_BENEATH)
    fd = _libc.syscall(_SYS_OPENAT2, AT_FDCWD, b".", ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        os.close(fd)
        return True
    return False


HAVE_OPENAT2 = _probe_openat2()
_RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS


def check_name(name: bytes) -> None:
    """A single directory entry name, as FUSE sends them: no '/', not '.' or '..'."""
    if not name or b"/" in name or name in (b".", b".."):
        raise OSError(errno.EINVAL, f"not a plain entry name: {name!r}")


# open(2) flags openat2 accepts (it rejects any other bit, such as the kernel-internal ones a
# FUSE request may carry); O_LARGEFILE is 0 in Python on 64-bit machines but not in the kernel
_VALID = (
    os.O_ACCMODE
    | os.O_CREAT
    | os.O_EXCL
    | os.O_NOCTTY
    | os.O_TRUNC
    | os.O_APPEND
    | os.O_NONBLOCK
    | os.O_SYNC
    | os.O_DSYNC
    | getattr(os, "O_ASYNC", 0o20000)
    | os.O_DIRECT
    | 0o100000
    | os.O_DIRECTORY
    | os.O_NOFOLLOW
    | os.O_NOATIME
    | os.O_CLOEXEC
    | os.O_PATH
    | os.O_TMPFILE
)


def open_beneath(dirfd: int, name: bytes, flags: int, mode: int = 0) -> int:
    """Open one entry of ``dirfd`` without following any symlink or leaving the directory.

    With ``O_PATH | O_NOFOLLOW`` a symlink itself is opened; otherwise a symlink gives ELOOP.
    """
    check_name(name)
    flags = (flags & _VALID) | os.O_NOFOLLOW | os.O_CLOEXEC
    if not HAVE_OPENAT2:
        return os.open(name, flags, mode, dir_fd=dirfd)
    # openat2 takes a mode only with O_CREAT/O_TMPFILE, and only permission bits
    mode = stat.S_IMODE(mode) if flags & os.O_CREAT or flags & os.O_TMPFILE == os.O_TMPFILE else 0
    how = _OpenHow(flags, mode, _RESOLVE)
    fd = _libc.syscall(_SYS_OPENAT2, dirfd, name, ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        _raise(name)
    return int(fd)


def proc_fd(fd: int) -> str:
    """The /proc path of one of our own descriptors: reopens exactly that inode.

    Never used for a symlink (the path walk would go on into the link's target).
    """
    return f"/proc/self/fd/{fd}"


def renameat2(old_dir: int, old: bytes, new_dir: int, new: bytes, flags: int = 0) -> None:
    """rename(2) between directory descriptors, with flags; raises OSError."""
    if flags == 0:
        os.rename(old, new, src_dir_fd=old_dir, dst_dir_fd=new_dir)
        return
    if _renameat2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    if _renameat2(old_dir, old, new_dir, new, flags) != 0:
        _raise(old)


def chown_fd(fd: int, uid: int, gid: int) -> None:
    """Change the owner of the inode an (O_PATH) descriptor holds; -1 keeps a field."""
    if (
        _libc.fchownat(
            fd, b"", uid & 0xFFFFFFFF, gid & 0xFFFFFFFF, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW
        )
        != 0
    ):
        _raise()


def utime_fd(fd: int, atime_ns: int, mtime_ns: int) -> None:
    """Set the times of the inode an (O_PATH) descriptor holds, symlinks included."""
    times = (_Timespec * 2)(
        _Timespec(*divmod(atime_ns, 10**9)), _Timespec(*divmod(mtime_ns, 10**9))
    )
    if _libc.utimensat(fd, b"", times, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0:
        _raise()


def fallocate(fd: int, mode: int, offset: int, length: int) -> None:
    if _libc.fallocate64(fd, mode, offset, length) != 0:
        _raise()


def umount_detach(path: str) -> None:
    if _libc.umount2(os.fsencode(path), MNT_DETACH) != 0:
        _raise(path)


def is_symlink(st: os.stat_result) -> bool:
    return stat.S_ISLNK(st.st_mode)


# -- per-thread credentials -----------------------------------------------------------------
_CREDS = _CRED_SYSCALLS.get(platform.machine())
_DAEMON_GROUPS = os.getgroups()


def _setfs(number: int, ident: int) -> int:
    return int(_libc.syscall(number, ctypes.c_uint(ident & 0xFFFFFFFF)))


def _setgroups(groups: Sequence[int]) -> None:
    assert _CREDS is not None
    array = (ctypes.c_uint * max(1, len(groups)))(*groups)
    if _libc.syscall(_CREDS[0], ctypes.c_size_t(len(groups)), array) != 0:
        _raise()


def can_switch_credentials() -> bool:
    """Whether this machine's architecture and our privileges allow acting as a caller."""
    return _CREDS is not None and os.geteuid() == 0


@contextlib.contextmanager
def acting_as(uid: int, gid: int, groups: Sequence[int]) -> Iterator[None]:
    """Run the enclosed (synchronous) system calls of this thread as ``uid``/``gid``/groups.

    Only the file-system ids and the supplementary groups of the calling thread change, so
    the kernel checks permissions as it would for the caller, and a file or directory made
    inside belongs to the caller (or to a setgid directory's group). A non-zero fsuid also
    drops the file capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, ...). The block
    must not await: other tasks of the event loop run on the same thread.
    """
    if uid == 0 or _CREDS is None:
        yield
        return
    _, nr_fsuid, nr_fsgid = _CREDS
    _setgroups(groups)
    try:
        _setfs(nr_fsgid, gid)
        _setfs(nr_fsuid, uid)
        # setfsuid/setfsgid report no error: an invalid id returns the current one
        if _setfs(nr_fsuid, -1) != uid or _setfs(nr_fsgid, -1) != gid:
            raise OSError(errno.EPERM, f"cannot act as uid {uid} gid {gid}")
        yield
    finally:
        _setfs(nr_fsuid, 0)
        _setfs(nr_fsgid, 0)
        _setgroups(_DAEMON_GROUPS)


def current_fs_ids() -> tuple[int, int]:
    """This thread's (fsuid, fsgid), for tests."""
    if _CREDS is None:
        return os.geteuid(), os.getegid()
    return _setfs(_CREDS[1], -1), _setfs(_CREDS[2], -1)
