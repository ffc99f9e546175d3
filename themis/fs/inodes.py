"""The mapping between FUSE inode numbers and files of the backing directory.

Each FUSE inode stands for one backing file (keyed by its ``(st_dev, st_ino)``) and holds an
``O_PATH`` descriptor of it, so every operation starts from that exact file and never resolves
a path (libfuse's passthrough_hp does the same). It also remembers the directory entries
``(parent inode, name)`` that lead to it: the kernel's ``..`` lookups are answered from them,
and a hard-linked file keeps one inode with several entries. Records (and descriptors) live
while the kernel holds a lookup reference or a known entry lies below them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field

ROOT = 1  # pyfuse3.ROOT_INODE


class StaleInode(OSError):
    """The kernel named an inode we no longer know, or one with no remaining entry."""

    def __init__(self, inode: int) -> None:
        super().__init__(errno.ESTALE, f"stale inode {inode}")


@dataclass
class Node:
    key: tuple[int, int] | None
    fd: int  # O_PATH | O_NOFOLLOW descriptor of the backing file
    kind: int  # stat.S_IFMT of the file
    links: set[tuple[int, bytes]] = field(default_factory=set)
    lookups: int = 0


def _reused(node: Node, st: os.stat_result) -> bool:
    """True when ``node``'s backing file is gone and ``st`` is another file that got its
    inode number (ext4 and others hand a freed number out again at once): the old file was
    unlinked, or is of another type (a symlink replaced by a file)."""
    if stat.S_IFMT(st.st_mode) != node.kind:
        return True
    if node.fd < 0:
        return False  # nameless but still linked somewhere (see remove_entry)
    try:
        old = os.fstat(node.fd)
    except OSError:
        return True
    return old.st_nlink == 0 or stat.S_IFMT(old.st_mode) != stat.S_IFMT(st.st_mode)


class InodeTable:
    """FUSE inode numbers <-> backing files; see the module docstring."""

    def __init__(self, root_fd: int) -> None:
        self._nodes: dict[int, Node] = {ROOT: Node(None, root_fd, stat.S_IFDIR, lookups=1)}
        self._by_key: dict[tuple[int, int], int] = {}
        self._entries: dict[tuple[int, bytes], int] = {}
        self._children: dict[int, int] = {}  # parent inode -> number of known entries in it
        self._next = ROOT + 1

    def __len__(self) -> int:
        return len(self._nodes)

    def fd(self, inode: int) -> int:
        """The O_PATH descriptor of ``inode``'s backing file (-1 once it has no name left)."""
        node = self._nodes.get(inode)
        if node is None:
            raise StaleInode(inode)
        return node.fd

    def kind(self, inode: int) -> int:
        node = self._nodes.get(inode)
        if node is None:
            raise StaleInode(inode)
        return node.kind

    def parent(self, inode: int) -> int:
        """The directory an entry of ``inode`` lies in (the root for the root)."""
        if inode == ROOT:
            return ROOT
        node = self._nodes.get(inode)
        if node is None or not node.links:
            raise StaleInode(inode)
        return min(node.links)[0]

    def entry_of(self, inode: int) -> tuple[int, bytes]:
        """One directory entry ``(parent inode, name)`` of ``inode``."""
        node = self._nodes.get(inode)
        if node is None or not node.links:
            raise StaleInode(inode)
        return min(node.links)

    @property
    def root_fd(self) -> int:
        return self._nodes[ROOT].fd

    def set_root_fd(self, fd: int) -> None:
        """Serve a new backing root (the old one was removed and made again)."""
        root = self._nodes[ROOT]
        old, root.fd = root.fd, fd
        with contextlib.suppress(OSError):
            os.close(old)

    def known(self, inode: int) -> bool:
        return inode in self._nodes

    def add(self, parent: int, name: bytes, st: os.stat_result, fd: int, lookups: int = 1) -> int:
        """Record entry ``name`` in ``parent`` for the file ``st`` opened as ``fd``.

        Returns its inode. The table owns ``fd`` from now on: it is closed at once when the
        file already has an inode (whose descriptor is kept).
        """
        key = (st.st_dev, st.st_ino)
        inode = self._by_key.get(key)
        if inode is not None and _reused(self._nodes[inode], st):
            self._unkey(inode)  # keeps serving the kernel's old references
            inode = None
        old = self._entries.get((parent, name))
        if old is not None and old != inode:
            self.remove_entry(parent, name)  # the name now leads to another file
        if inode is None:
            inode = self._next
            self._next += 1
            self._nodes[inode] = Node(key=key, fd=fd, kind=stat.S_IFMT(st.st_mode))
            self._by_key[key] = inode
        elif self._nodes[inode].fd < 0:
            self._nodes[inode].fd = fd
        elif fd != self._nodes[inode].fd:
            os.close(fd)
        node = self._nodes[inode]
        self._link(inode, parent, name)
        node.lookups += lookups
        return inode

    def _unkey(self, inode: int) -> None:
        """Stop matching ``inode`` to its backing file's number (the file is gone)."""
        node = self._nodes[inode]
        if node.key is not None and self._by_key.get(node.key) == inode:
            del self._by_key[node.key]
        node.key = None

    def inode_of(self, st: os.stat_result) -> int | None:
        """The inode already standing for the backing file ``st``, if any."""
        return self._by_key.get((st.st_dev, st.st_ino))

    def entry(self, parent: int, name: bytes) -> int | None:
        return self._entries.get((parent, name))

    def _link(self, inode: int, parent: int, name: bytes) -> None:
        node = self._nodes[inode]
        if (parent, name) not in node.links:
            node.links.add((parent, name))
            self._entries[(parent, name)] = inode
            self._children[parent] = self._children.get(parent, 0) + 1

    def _unlink(self, inode: int, parent: int, name: bytes) -> None:
        node = self._nodes[inode]
        if (parent, name) in node.links:
            node.links.discard((parent, name))
            del self._entries[(parent, name)]
            left = self._children[parent] - 1
            if left:
                self._children[parent] = left
            else:
                del self._children[parent]
                self._drop_if_unused(parent)

    def remove_entry(self, parent: int, name: bytes) -> None:
        """Forget the entry ``name`` in ``parent`` (after unlink/rmdir, or overwritten)."""
        inode = self._entries.get((parent, name))
        if inode is None:
            return
        self._unlink(inode, parent, name)
        node = self._nodes.get(inode)
        if node is not None and not node.links and node.kind != stat.S_IFDIR and node.fd >= 0:
            # Its last known name is gone: our descriptor must not keep the file's space
            # allocated. Files still open are reached through their open descriptors; a name
            # we did not know (a hard link) gives the record a descriptor again on lookup.
            # A file with no link left anywhere can never be looked up again: its inode
            # number is free for the next file the backing file system makes.
            with contextlib.suppress(OSError):
                if os.fstat(node.fd).st_nlink == 0:
                    self._unkey(inode)
            with contextlib.suppress(OSError):
                os.close(node.fd)
            node.fd = -1
        self._drop_if_unused(inode)

    def rename(self, parent_old: int, old: bytes, parent_new: int, new: bytes) -> None:
        moved = self.entry(parent_old, old)
        if moved == self.entry(parent_new, new) and moved is not None:
            return  # both names are hard links of one file: POSIX rename does nothing
        self.remove_entry(parent_new, new)
        if moved is not None:
            self._link(moved, parent_new, new)
            self._unlink(moved, parent_old, old)

    def exchange(self, parent_a: int, a: bytes, parent_b: int, b: bytes) -> None:
        ino_a, ino_b = self.entry(parent_a, a), self.entry(parent_b, b)
        if ino_a is not None:
            self._unlink(ino_a, parent_a, a)
        if ino_b is not None:
            self._unlink(ino_b, parent_b, b)
        if ino_a is not None and ino_a in self._nodes:
            self._link(ino_a, parent_b, b)
        if ino_b is not None and ino_b in self._nodes:
            self._link(ino_b, parent_a, a)

    def ref(self, inode: int) -> None:
        """One more kernel reference to a known inode (lookup of ``.`` or ``..``)."""
        self._nodes[inode].lookups += 1

    def forget(self, inode: int, count: int) -> None:
        node = self._nodes.get(inode)
        if node is None or inode == ROOT:
            return
        node.lookups = max(0, node.lookups - count)
        self._drop_if_unused(inode)

    def _drop_if_unused(self, inode: int) -> None:
        node = self._nodes.get(inode)
        if node is None or inode == ROOT or node.lookups > 0 or self._children.get(inode):
            return
        self._unkey(inode)
        del self._nodes[inode]
        for parent, name in list(node.links):
            del self._entries[(parent, name)]
            left = self._children[parent] - 1
            if left:
                self._children[parent] = left
            else:
                del self._children[parent]
                self._drop_if_unused(parent)
        if node.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(node.fd)

    def close_all(self) -> None:
        """Close every descriptor (after unmount)."""
        for node in self._nodes.values():
            if node.fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(node.fd)
        self._nodes.clear()
        self._by_key.clear()
        self._entries.clear()
        self._children.clear()
