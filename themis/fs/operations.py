"""The pyfuse3 passthrough of a backing directory, with every open file tagged with its job.

The daemon runs as root in front of directories that users can also change directly, so it
never resolves a path: every inode holds an ``O_PATH | O_NOFOLLOW`` descriptor of its backing
file (:mod:`themis.fs.inodes`), names the kernel sends are opened one component at a time
beneath their directory's descriptor (``openat2`` with ``RESOLVE_BENEATH |
RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS``, :func:`~themis.fs.syscalls.open_beneath`), and
whatever creates, removes, renames, opens or changes a file runs with the caller's fsuid, fsgid
and supplementary groups (:func:`~themis.fs.syscalls.acting_as`), so the backing file system
checks permissions as it would for the caller. See docs/themis.md, "Security".

Metadata calls run on the event loop (short syscalls: threads cost more than they save here).
Reads, writes, flush, fsync and fallocate of open files are served by the compiled data path
(``files``, themis/fs/datapath.py) when it is installed; otherwise reads and writes go through
``io`` (the fair scheduler) and fsync, which really blocks, runs in a worker thread.
The kernel enforces permissions first (``default_permissions``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

import pyfuse3
import trio

from themis.fs.caller import caller_of
from themis.fs.errors import fuse_errors
from themis.fs.inodes import ROOT, InodeTable
from themis.fs.syscalls import (
    RENAME_EXCHANGE,
    acting_as,
    can_switch_credentials,
    check_name,
    chown_fd,
    fallocate,
    open_beneath,
    proc_fd,
    renameat2,
    utime_fd,
)
from themis.tagging import JobTag, Tagger

log = logging.getLogger("themis.fs")

_SUID_SGID = stat.S_ISUID | stat.S_ISGID


class RequestIO(Protocol):
    """Where reads and writes go: the scheduler, which decides their order."""

    async def read(self, tag: JobTag, fd: int, offset: int, size: int) -> bytes: ...

    async def write(self, tag: JobTag, fd: int, offset: int, data: bytes) -> int: ...


Opener = Callable[[int], int]  # open flags -> descriptor


class OpenFiles(Protocol):
    """The compiled data path: told each open file's descriptor and job (it serves their
    reads and writes); ``closed`` returns once no request uses the descriptor."""

    def opened(self, fh: int, fd: int, tag: JobTag) -> None: ...

    def closed(self, fh: int) -> None: ...


class JobActivity(Protocol):
    """Told when a job opens and closes files (metrics keep live jobs, expire the rest)."""

    def file_opened(self, tag: JobTag) -> None: ...

    def file_closed(self, tag: JobTag) -> None: ...


@dataclass
class Handle:
    fd: int
    inode: int
    tag: JobTag


@dataclass
class DirHandle:
    inode: int
    fd: int  # the open directory (names are opened beneath it)
    names: list[bytes] = field(default_factory=list)


def _open_root(backing: str) -> int:
    """The backing root, named by the administrator (the only path the daemon resolves)."""
    return os.open(backing, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


class PassthroughFS(pyfuse3.Operations):
    """See the module docstring."""

    supports_dot_lookup = True
    enable_writeback_cache = False

    def __init__(
        self,
        backing: str,
        io: RequestIO,
        tagger: Tagger,
        activity: JobActivity | None = None,
        attr_timeout: float = 1.0,
        entry_timeout: float = 1.0,
        xattrs: bool = True,
        keep_cache: bool = False,
        files: OpenFiles | None = None,
        writeback_cache: bool = False,
        cache_unchanged: bool = False,
    ) -> None:
        super().__init__()
        self.backing = os.path.abspath(backing)
        self.inodes = InodeTable(_open_root(self.backing))
        self.io = io
        self.tagger = tagger
        self.activity = activity
        self.attr_timeout = attr_timeout
        self.entry_timeout = entry_timeout
        self.xattrs = xattrs
        self.keep_cache = keep_cache
        self.files = files
        self.writeback_cache = writeback_cache
        self.cache_unchanged = cache_unchanged
        self._closed_as: dict[int, tuple[int, int, int]] = {}  # inode -> mtime, ctime, size
        self.act_as_caller = can_switch_credentials()
        if not self.act_as_caller:
            log.warning(
                "not root or unknown architecture: every request runs with the "
                "daemon's own credentials"
            )
        self._handles: dict[int, Handle | DirHandle] = {}
        self._open: dict[int, set[int]] = {}  # inode -> descriptors open on it
        self._next_fh = 1

    # -- helpers -------------------------------------------------------------------------
    def _attrs(self, inode: int, st: os.stat_result) -> pyfuse3.EntryAttributes:
        attr = pyfuse3.EntryAttributes()
        attr.st_ino = cast(pyfuse3.InodeT, inode)
        attr.generation = 0
        attr.entry_timeout = self.entry_timeout
        attr.attr_timeout = self.attr_timeout
        attr.st_mode = cast(pyfuse3.ModeT, st.st_mode)
        attr.st_nlink = st.st_nlink
        attr.st_uid = st.st_uid
        attr.st_gid = st.st_gid
        attr.st_rdev = st.st_rdev
        attr.st_size = st.st_size
        attr.st_blksize = st.st_blksize
        attr.st_blocks = st.st_blocks
        attr.st_atime_ns = st.st_atime_ns
        attr.st_mtime_ns = st.st_mtime_ns
        attr.st_ctime_ns = st.st_ctime_ns
        return attr

    def _as(self, ctx: pyfuse3.RequestContext) -> contextlib.AbstractContextManager[None]:
        """Act as the caller for the (synchronous) calls inside; see syscalls.acting_as."""
        if not self.act_as_caller or ctx.uid == 0:
            return contextlib.nullcontext()
        who = caller_of(ctx.pid, ctx.uid, ctx.gid)
        return acting_as(who.uid, who.gid, who.groups)

    def _fd(self, inode: int) -> int:
        """The inode's O_PATH descriptor, or for an unlinked file one of its open ones."""
        fd = self.inodes.fd(inode)
        if fd >= 0:
            return fd
        fds = self._open.get(inode)
        if fds:
            return next(iter(fds))
        raise OSError(errno.ESTALE, "file removed")

    def _not_symlink(self, inode: int) -> int:
        """The descriptor of a file that is not a symlink (only those are reopened via /proc)."""
        if self.inodes.kind(inode) == stat.S_IFLNK:
            raise OSError(errno.ELOOP, "a symlink")
        return self._fd(inode)

    def _entry(self, parent: int, name: bytes) -> pyfuse3.EntryAttributes:
        """Look ``name`` up beneath ``parent`` (never following it) and record its inode."""
        fd = open_beneath(self._fd(parent), name, os.O_PATH)
        try:
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        return self._attrs(self.inodes.add(parent, name, st, fd), st)

    def _new_fh(self, handle: Handle | DirHandle) -> int:
        fh = self._next_fh
        self._next_fh += 1
        self._handles[fh] = handle
        return fh

    def _file(self, fh: int) -> Handle:
        handle = self._handles.get(fh)
        if not isinstance(handle, Handle):
            raise OSError(errno.EBADF, "bad file handle")
        return handle

    async def _tag(self, ctx: pyfuse3.RequestContext) -> JobTag:
        tag = self.tagger.cached(ctx.pid, ctx.uid, ctx.gid)
        if tag is None:  # reading /proc/pid/environ or asking Slurm may block: off the loop
            tag = await trio.to_thread.run_sync(self.tagger.tag, ctx.pid, ctx.uid, ctx.gid)
        return tag

    def _opened(self, fd: int, inode: int, tag: JobTag) -> int:
        self._open.setdefault(inode, set()).add(fd)
        if self.activity is not None:
            self.activity.file_opened(tag)
        fh = self._new_fh(Handle(fd, inode, tag))
        if self.files is not None:
            self.files.opened(fh, fd, tag)
        return fh

    def _open_as_caller(self, ctx: pyfuse3.RequestContext, flags: int, opener: Opener) -> int:
        """``opener(flags)`` as the caller. With the writeback cache the kernel reads to fill
        the pages of a file opened write-only and keeps O_APPEND's offsets itself: such a file
        is opened read-write when the caller may read it too, and O_APPEND is dropped."""
        with self._as(ctx):
            if not self.writeback_cache:
                return opener(flags)
            flags &= ~os.O_APPEND
            if flags & os.O_ACCMODE == os.O_WRONLY:
                try:
                    return opener((flags & ~os.O_ACCMODE) | os.O_RDWR)
                except PermissionError:
                    pass  # write-only for this caller: partial-page writes may fail
            return opener(flags)

    def _keep_cache(self, inode: int, fd: int) -> bool:
        """Whether the kernel may keep the file's cached pages: always with ``keep_cache``;
        with ``cache_unchanged`` when mtime, ctime and size are those of its last close here
        (a change made directly in the backing directory moves ctime, which no one can set)."""
        if self.keep_cache:
            return True
        if not self.cache_unchanged:
            return False
        st = os.fstat(fd)
        return self._closed_as.get(inode) == (st.st_mtime_ns, st.st_ctime_ns, st.st_size)

    def _remember_close(self, handle: Handle) -> None:
        if not self.cache_unchanged:
            return
        with contextlib.suppress(OSError):
            st = os.fstat(handle.fd)
            self._closed_as.pop(handle.inode, None)
            self._closed_as[handle.inode] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size)
            if len(self._closed_as) > 65536:  # bounded: forget the oldest
                del self._closed_as[next(iter(self._closed_as))]

    def refresh_root(self) -> bool:
        """Whether the backing directory is there; a directory made again is served anew."""
        try:
            st = os.stat(self.backing)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
        held = os.fstat(self.inodes.root_fd)
        if (held.st_dev, held.st_ino) != (st.st_dev, st.st_ino):
            self.inodes.set_root_fd(_open_root(self.backing))
        return True

    # -- lookups and attributes ----------------------------------------------------------
    @fuse_errors
    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        if name in (b".", b".."):  # answered from the table: never a walk up the backing tree
            inode = parent_inode if name == b"." else self.inodes.parent(parent_inode)
            st = os.fstat(self._fd(inode))
            self.inodes.ref(inode)
            return self._attrs(inode, st)
        return self._entry(parent_inode, name)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, count in inode_list:
            self.inodes.forget(inode, count)

    @fuse_errors
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        return self._attrs(inode, os.fstat(self._fd(inode)))

    @fuse_errors
    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        node_fd = self._fd(inode)
        handle = self._handles.get(fh) if fh is not None else None
        open_fd = handle.fd if isinstance(handle, Handle) else None
        st = os.fstat(node_fd)
        is_link = stat.S_ISLNK(st.st_mode)
        if fields.update_size:
            with self._as(ctx):
                os.truncate(
                    open_fd if open_fd is not None else proc_fd(self._not_symlink(inode)),
                    attr.st_size,
                )
        if fields.update_mode:
            if is_link:
                raise OSError(errno.EOPNOTSUPP, "symlinks have no mode of their own")
            mode, now = stat.S_IMODE(attr.st_mode), stat.S_IMODE(st.st_mode)
            # The kernel clears set-id bits after a write or truncate by a non-owner (it has
            # checked that itself): only that change runs as root.
            kill_priv = (
                mode != now and (mode | _SUID_SGID) == (now | _SUID_SGID) and not mode & ~now
            )
            with contextlib.nullcontext() if kill_priv else self._as(ctx):
                os.chmod(open_fd if open_fd is not None else proc_fd(node_fd), mode)
        if fields.update_uid or fields.update_gid:
            with self._as(ctx):
                chown_fd(
                    node_fd,
                    attr.st_uid if fields.update_uid else -1,
                    attr.st_gid if fields.update_gid else -1,
                )
        if fields.update_atime or fields.update_mtime:
            atime = attr.st_atime_ns if fields.update_atime else st.st_atime_ns
            mtime = attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns
            # pyfuse3 turns UTIME_NOW into the current time. The kernel lets a non-owner
            # through only for UTIME_NOW with write access (explicit times need ownership),
            # and only the owner may set explicit times: a non-owner's request runs as root.
            owner = ctx.uid in (0, st.st_uid)
            with self._as(ctx) if owner else contextlib.nullcontext():
                utime_fd(node_fd, atime, mtime)
        return self._attrs(inode, os.fstat(node_fd))

    @fuse_errors
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        return os.fsencode(os.readlink(b"", dir_fd=self._fd(inode)))

    @fuse_errors
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        sv = os.statvfs(self.inodes.root_fd)
        data = pyfuse3.StatvfsData()
        for name in (
            "f_bsize",
            "f_frsize",
            "f_blocks",
            "f_bfree",
            "f_bavail",
            "f_files",
            "f_ffree",
            "f_favail",
            "f_namemax",
        ):
            setattr(data, name, getattr(sv, name))
        return data

    # -- namespace changes (as the caller) -----------------------------------------------
    @fuse_errors
    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        check_name(name)
        if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and ctx.uid != 0:
            raise OSError(errno.EPERM, "device nodes need CAP_MKNOD")  # the kernel checks too
        with self._as(ctx):
            os.mknod(name, mode, rdev, dir_fd=self._fd(parent_inode))
        return self._entry(parent_inode, name)

    @fuse_errors
    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        check_name(name)
        with self._as(ctx):
            os.mkdir(name, mode, dir_fd=self._fd(parent_inode))
        return self._entry(parent_inode, name)

    @fuse_errors
    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        check_name(name)
        with self._as(ctx):
            os.symlink(target, name, dir_fd=self._fd(parent_inode))
        return self._entry(parent_inode, name)

    @fuse_errors
    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        check_name(new_name)
        node_fd = self._fd(inode)
        with self._as(ctx):  # /proc/self/fd/N names exactly this inode (a symlink itself too)
            os.link(
                proc_fd(node_fd),
                new_name,
                dst_dir_fd=self._fd(new_parent_inode),
                follow_symlinks=True,
            )
        st = os.fstat(node_fd)
        inode = self.inodes.add(new_parent_inode, new_name, st, os.dup(node_fd))
        return self._attrs(inode, st)

    @fuse_errors
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        check_name(name)
        with self._as(ctx):
            os.unlink(name, dir_fd=self._fd(parent_inode))
        self.inodes.remove_entry(parent_inode, name)

    @fuse_errors
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        check_name(name)
        with self._as(ctx):
            os.rmdir(name, dir_fd=self._fd(parent_inode))
        self.inodes.remove_entry(parent_inode, name)

    @fuse_errors
    async def rename(
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        check_name(name_old)
        check_name(name_new)
        with self._as(ctx):
            renameat2(
                self._fd(parent_inode_old),
                name_old,
                self._fd(parent_inode_new),
                name_new,
                int(flags),
            )
        if flags & RENAME_EXCHANGE:
            self.inodes.exchange(parent_inode_old, name_old, parent_inode_new, name_new)
        else:
            self.inodes.rename(parent_inode_old, name_old, parent_inode_new, name_new)

    # -- files ---------------------------------------------------------------------------
    @fuse_errors
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        tag = await self._tag(ctx)  # before acting as the caller: it may await
        node_fd = self._not_symlink(inode)
        flags = (flags & ~(os.O_CREAT | os.O_EXCL | os.O_NOCTTY | os.O_NOFOLLOW)) | os.O_CLOEXEC
        # reopens exactly this inode, checked as the caller
        fd = self._open_as_caller(ctx, flags, lambda f: os.open(proc_fd(node_fd), f))
        keep = self._keep_cache(inode, fd)
        fh = cast(pyfuse3.FileHandleT, self._opened(fd, inode, tag))
        return pyfuse3.FileInfo(fh=fh, keep_cache=keep)

    @fuse_errors
    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: pyfuse3.RequestContext
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        tag = await self._tag(ctx)
        dir_fd = self._fd(parent_inode)
        fd = self._open_as_caller(
            ctx, flags | os.O_CREAT, lambda f: open_beneath(dir_fd, name, f, mode)
        )
        try:
            st = os.fstat(fd)
            path_fd = os.open(proc_fd(fd), os.O_PATH | os.O_CLOEXEC)
            attrs = self._attrs(self.inodes.add(parent_inode, name, st, path_fd), st)
        except BaseException:
            os.close(fd)
            raise
        fh = self._opened(fd, int(attrs.st_ino), tag)
        return pyfuse3.FileInfo(fh=cast(pyfuse3.FileHandleT, fh), keep_cache=self.keep_cache), attrs

    @fuse_errors
    async def read(self, fh: int, off: int, size: int) -> bytes:
        handle = self._file(fh)
        return await self.io.read(handle.tag, handle.fd, off, size)

    @fuse_errors
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        handle = self._file(fh)
        return await self.io.write(handle.tag, handle.fd, off, buf)

    @fuse_errors
    async def flush(self, fh: int) -> None:
        os.close(os.dup(self._file(fh).fd))  # close() semantics of the backing store

    @fuse_errors
    async def fsync(self, fh: int, datasync: bool) -> None:
        sync = os.fdatasync if datasync else os.fsync
        await trio.to_thread.run_sync(sync, self._file(fh).fd)

    def fallocate(self, fh: int, mode: int, offset: int, length: int) -> int:
        """fallocate(2) on an open file (called by themis.fs.lowlevel); returns an errno."""
        handle = self._handles.get(fh)
        if not isinstance(handle, Handle):
            return errno.EBADF
        try:
            fallocate(handle.fd, mode, offset, length)
        except OSError as exc:
            return exc.errno or errno.EIO
        return 0

    @fuse_errors
    async def release(self, fh: int) -> None:
        handle = self._handles.pop(fh, None)
        if not isinstance(handle, Handle):
            return
        if self.files is not None:
            self.files.closed(fh)
        self._remember_close(handle)
        fds = self._open.get(handle.inode)
        if fds is not None:
            fds.discard(handle.fd)
            if not fds:
                del self._open[handle.inode]
        if self.activity is not None:
            self.activity.file_closed(handle.tag)
        os.close(handle.fd)

    # -- directories ---------------------------------------------------------------------
    @fuse_errors
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=self._fd(inode))
        try:
            names = sorted(os.fsencode(n) for n in os.listdir(fd))
        except BaseException:
            os.close(fd)
            raise
        return self._new_fh(DirHandle(inode, fd, names))

    @fuse_errors
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        handle = self._handles.get(fh)
        if not isinstance(handle, DirHandle):
            raise OSError(errno.EBADF, "bad directory handle")
        for index in range(start_id, len(handle.names)):
            name = handle.names[index]
            try:
                fd = open_beneath(handle.fd, name, os.O_PATH)
            except FileNotFoundError:
                continue  # removed since opendir
            try:
                st = os.fstat(fd)
            except BaseException:
                os.close(fd)
                raise
            inode = self.inodes.add(handle.inode, name, st, fd)
            if not pyfuse3.readdir_reply(token, name, self._attrs(inode, st), index + 1):
                self.inodes.forget(inode, 1)
                break

    @fuse_errors
    async def releasedir(self, fh: int) -> None:
        handle = self._handles.pop(fh, None)
        if isinstance(handle, DirHandle):
            os.close(handle.fd)

    @fuse_errors
    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        handle = self._handles.get(fh)
        if isinstance(handle, DirHandle):
            await trio.to_thread.run_sync(os.fsync, handle.fd)

    # -- extended attributes -------------------------------------------------------------
    def _xattr_target(self, inode: int) -> tuple[str, bool]:
        """A path reaching exactly this inode, and whether to follow its last component.

        A file is reached through its own descriptor (/proc/self/fd/N). A symlink has no such
        way (the magic link would go on into the link's target), so it is reached as its name
        inside its directory's descriptor, never followed.
        """
        if not self.xattrs:
            raise OSError(errno.ENOSYS, "extended attributes are switched off")
        if self.inodes.kind(inode) != stat.S_IFLNK:
            return proc_fd(self._fd(inode)), True
        parent, name = self.inodes.entry_of(inode)
        return f"{proc_fd(self._fd(parent))}/{os.fsdecode(name)}", False

    @fuse_errors
    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        target, follow = self._xattr_target(inode)
        with self._as(ctx):
            os.setxattr(target, name, value, follow_symlinks=follow)

    @fuse_errors
    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        target, follow = self._xattr_target(inode)
        return os.getxattr(target, name, follow_symlinks=follow)

    @fuse_errors
    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        target, follow = self._xattr_target(inode)
        names = os.listxattr(target, follow_symlinks=follow)
        return [os.fsencode(n) for n in names]

    @fuse_errors
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        target, follow = self._xattr_target(inode)
        with self._as(ctx):
            os.removexattr(target, name, follow_symlinks=follow)

    # -- shutdown ------------------------------------------------------------------------
    def close_all(self) -> None:
        """Close every backing descriptor (after unmount, when no release will come)."""
        for fh, handle in self._handles.items():
            if self.files is not None and isinstance(handle, Handle):
                self.files.closed(fh)
            with contextlib.suppress(OSError):
                os.close(handle.fd)
        self._handles.clear()
        self._open.clear()
        self.inodes.close_all()


__all__ = [
    "ROOT",
    "DirHandle",
    "Handle",
    "JobActivity",
    "OpenFiles",
    "PassthroughFS",
    "RequestIO",
]
