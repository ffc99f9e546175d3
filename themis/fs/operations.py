"""The pyfuse3 passthrough of a backing directory, with every open file tagged with its job.

Metadata calls go straight to the backing store (short syscalls: threads cost more than they
save here). Reads and writes go through ``io`` (the fair scheduler); fsync, which really blocks,
runs in a worker thread. Files and directories are created with the caller's uid/gid; the kernel
enforces permissions (``default_permissions``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

import pyfuse3
import trio

from themis.fs.errors import fuse_errors
from themis.fs.inodes import ROOT, InodeTable, StaleInode
from themis.fs.syscalls import RENAME_EXCHANGE, renameat2
from themis.tagging import JobTag, Tagger

log = logging.getLogger("themis.fs")


class RequestIO(Protocol):
    """Where reads and writes go: the scheduler, which decides their order."""

    async def read(self, tag: JobTag, fd: int, offset: int, size: int) -> bytes: ...

    async def write(self, tag: JobTag, fd: int, offset: int, data: bytes) -> int: ...


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
    names: list[bytes] = field(default_factory=list)


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
    ) -> None:
        super().__init__()
        self.inodes = InodeTable(backing)
        self.io = io
        self.tagger = tagger
        self.activity = activity
        self.attr_timeout = attr_timeout
        self.entry_timeout = entry_timeout
        self.xattrs = xattrs
        self.keep_cache = keep_cache
        self._handles: dict[int, Handle | DirHandle] = {}
        self._open_fds: dict[int, set[int]] = {}  # inode -> fds open on it (stat after unlink)
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

    def _stat(self, inode: int) -> os.stat_result:
        try:
            return os.lstat(self.inodes.path(inode))
        except (StaleInode, FileNotFoundError):
            fds = self._open_fds.get(inode)
            if fds:  # an open file whose last name is gone
                return os.fstat(next(iter(fds)))
            raise

    def _entry(self, parent: int, name: bytes, st: os.stat_result) -> pyfuse3.EntryAttributes:
        return self._attrs(self.inodes.add(parent, name, st), st)

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

    def _owner_of_new(self, parent_path: bytes, ctx: pyfuse3.RequestContext) -> tuple[int, int]:
        """uid/gid for a new entry: the caller's, or the directory's group when it is setgid."""
        gid = ctx.gid
        try:
            pst = os.stat(parent_path)
            if pst.st_mode & stat.S_ISGID:
                gid = pst.st_gid
        except OSError:
            pass
        return ctx.uid, gid

    def _chown_new(self, path: bytes, parent: int, ctx: pyfuse3.RequestContext) -> None:
        uid, gid = self._owner_of_new(self.inodes.path(parent), ctx)
        if (uid, gid) != (os.geteuid(), os.getegid()):
            os.lchown(path, uid, gid)

    async def _tag(self, ctx: pyfuse3.RequestContext) -> JobTag:
        tag = self.tagger.cached(ctx.pid, ctx.uid, ctx.gid)
        if tag is None:  # reading /proc/pid/environ may block: keep it off the event loop
            tag = await trio.to_thread.run_sync(self.tagger.tag, ctx.pid, ctx.uid, ctx.gid)
        return tag

    def _opened(self, fd: int, inode: int, tag: JobTag) -> int:
        self._open_fds.setdefault(inode, set()).add(fd)
        if self.activity is not None:
            self.activity.file_opened(tag)
        return self._new_fh(Handle(fd, inode, tag))

    # -- lookups and attributes ----------------------------------------------------------
    @fuse_errors
    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        if name in (b".", b".."):
            path = self.inodes.path(parent_inode)
            if name == b"..":
                path = os.path.dirname(path) if parent_inode != ROOT else path
            st = os.lstat(path)
            inode = ROOT if path == self.inodes.root else self.inodes.inode_of(st)
            if inode is None:
                raise OSError(errno.ESTALE, "unknown parent")
            self.inodes.ref(inode)
            return self._attrs(inode, st)
        path = self.inodes.child(parent_inode, name)
        return self._entry(parent_inode, name, os.lstat(path))

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, count in inode_list:
            self.inodes.forget(inode, count)

    @fuse_errors
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        return self._attrs(inode, self._stat(inode))

    @fuse_errors
    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        fd = self._file(fh).fd if fh is not None and fh in self._handles else None
        if fd is not None:  # ftruncate(2), fchmod(2), ...: work on the open file
            self._set(fd, attr, fields, os.fstat(fd))
            return self._attrs(inode, os.fstat(fd))
        path = self.inodes.path(inode)
        self._set(path, attr, fields, os.lstat(path))
        return self._attrs(inode, self._stat(inode))

    @staticmethod
    def _set(target: bytes | int, attr: pyfuse3.EntryAttributes, fields: pyfuse3.SetattrFields,
             st: os.stat_result) -> None:
        """Apply the changed fields to a path (never following a symlink) or an open fd."""
        is_link = stat.S_ISLNK(st.st_mode)
        follow = isinstance(target, int)
        if fields.update_size:
            os.truncate(target, attr.st_size)
        if fields.update_mode and not is_link:
            os.chmod(target, stat.S_IMODE(attr.st_mode))
        if fields.update_uid or fields.update_gid:
            uid = attr.st_uid if fields.update_uid else -1
            gid = attr.st_gid if fields.update_gid else -1
            os.chown(target, uid, gid, follow_symlinks=follow)
        if fields.update_atime or fields.update_mtime:
            atime = attr.st_atime_ns if fields.update_atime else st.st_atime_ns
            mtime = attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns
            os.utime(target, ns=(atime, mtime), follow_symlinks=follow)

    @fuse_errors
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        return os.readlink(self.inodes.path(inode))

    @fuse_errors
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        sv = os.statvfs(self.inodes.root)
        data = pyfuse3.StatvfsData()
        for name in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                     "f_ffree", "f_favail", "f_namemax"):
            setattr(data, name, getattr(sv, name))
        return data

    # -- namespace changes ---------------------------------------------------------------
    @fuse_errors
    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        path = self.inodes.child(parent_inode, name)
        os.mknod(path, mode, rdev)
        self._chown_new(path, parent_inode, ctx)
        return self._entry(parent_inode, name, os.lstat(path))

    @fuse_errors
    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        path = self.inodes.child(parent_inode, name)
        os.mkdir(path, mode)
        self._chown_new(path, parent_inode, ctx)
        return self._entry(parent_inode, name, os.lstat(path))

    @fuse_errors
    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        path = self.inodes.child(parent_inode, name)
        os.symlink(target, path)
        self._chown_new(path, parent_inode, ctx)
        return self._entry(parent_inode, name, os.lstat(path))

    @fuse_errors
    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        path = self.inodes.child(new_parent_inode, new_name)
        os.link(self.inodes.path(inode), path, follow_symlinks=False)
        return self._entry(new_parent_inode, new_name, os.lstat(path))

    @fuse_errors
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        os.unlink(self.inodes.child(parent_inode, name))
        self.inodes.remove_entry(parent_inode, name)

    @fuse_errors
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        os.rmdir(self.inodes.child(parent_inode, name))
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
        old = self.inodes.child(parent_inode_old, name_old)
        new = self.inodes.child(parent_inode_new, name_new)
        renameat2(old, new, int(flags))
        if flags & RENAME_EXCHANGE:
            self.inodes.exchange(parent_inode_old, name_old, parent_inode_new, name_new)
        else:
            self.inodes.rename(parent_inode_old, name_old, parent_inode_new, name_new)

    # -- files ---------------------------------------------------------------------------
    @fuse_errors
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        tag = await self._tag(ctx)
        fd = os.open(self.inodes.path(inode), flags & ~(os.O_CREAT | os.O_EXCL | os.O_NOCTTY))
        fh = cast(pyfuse3.FileHandleT, self._opened(fd, inode, tag))
        return pyfuse3.FileInfo(fh=fh, keep_cache=self.keep_cache)

    @fuse_errors
    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: pyfuse3.RequestContext
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        tag = await self._tag(ctx)
        path = self.inodes.child(parent_inode, name)
        fd = os.open(path, flags | os.O_CREAT, mode)
        try:
            uid, gid = self._owner_of_new(self.inodes.path(parent_inode), ctx)
            if (uid, gid) != (os.geteuid(), os.getegid()):
                os.fchown(fd, uid, gid)
            attrs = self._entry(parent_inode, name, os.fstat(fd))
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

    @fuse_errors
    async def release(self, fh: int) -> None:
        handle = self._handles.pop(fh, None)
        if not isinstance(handle, Handle):
            return
        fds = self._open_fds.get(handle.inode)
        if fds is not None:
            fds.discard(handle.fd)
            if not fds:
                del self._open_fds[handle.inode]
        if self.activity is not None:
            self.activity.file_closed(handle.tag)
        os.close(handle.fd)

    # -- directories ---------------------------------------------------------------------
    @fuse_errors
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        names = sorted(os.listdir(self.inodes.path(inode)))
        return self._new_fh(DirHandle(inode, names))

    @fuse_errors
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        handle = self._handles.get(fh)
        if not isinstance(handle, DirHandle):
            raise OSError(errno.EBADF, "bad directory handle")
        parent_path = self.inodes.path(handle.inode)
        for index in range(start_id, len(handle.names)):
            name = handle.names[index]
            try:
                st = os.lstat(os.path.join(parent_path, name))
            except FileNotFoundError:
                continue  # removed since opendir
            inode = self.inodes.add(handle.inode, name, st)
            if not pyfuse3.readdir_reply(token, name, self._attrs(inode, st), index + 1):
                self.inodes.forget(inode, 1)
                break

    @fuse_errors
    async def releasedir(self, fh: int) -> None:
        self._handles.pop(fh, None)

    @fuse_errors
    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        handle = self._handles.get(fh)
        if isinstance(handle, DirHandle):
            fd = os.open(self.inodes.path(handle.inode), os.O_RDONLY | os.O_DIRECTORY)
            try:
                await trio.to_thread.run_sync(os.fsync, fd)
            finally:
                os.close(fd)

    # -- extended attributes -------------------------------------------------------------
    def _xattr_path(self, inode: int) -> bytes:
        if not self.xattrs:
            raise OSError(errno.ENOSYS, "extended attributes are switched off")
        return self.inodes.path(inode)

    @fuse_errors
    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        os.setxattr(self._xattr_path(inode), name, value, follow_symlinks=False)

    @fuse_errors
    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        return os.getxattr(self._xattr_path(inode), name, follow_symlinks=False)

    @fuse_errors
    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        names = os.listxattr(self._xattr_path(inode), follow_symlinks=False)
        return [os.fsencode(n) for n in names]

    @fuse_errors
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        os.removexattr(self._xattr_path(inode), name, follow_symlinks=False)

    # -- shutdown ------------------------------------------------------------------------
    def close_all(self) -> None:
        """Close every backing descriptor (after unmount, when no release will come)."""
        for handle in self._handles.values():
            if isinstance(handle, Handle):
                with contextlib.suppress(OSError):
                    os.close(handle.fd)
        self._handles.clear()
        self._open_fds.clear()
