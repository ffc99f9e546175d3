"""The mapping between FUSE inode numbers and names in the backing directory.

Each FUSE inode stands for one backing file (keyed by its ``(st_dev, st_ino)``) and remembers
the directory entries ``(parent inode, name)`` that lead to it, so a path is rebuilt by walking
up to the root. Renaming a directory therefore moves everything below it, and a hard-linked file
keeps one inode with several entries. Records live while the kernel holds a lookup reference.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

ROOT = 1  # pyfuse3.ROOT_INODE


class StaleInode(OSError):
    """The kernel named an inode we no longer know, or one with no remaining entry."""

    def __init__(self, inode: int) -> None:
        super().__init__(errno.ESTALE, f"stale inode {inode}")


@dataclass
class Node:
    key: tuple[int, int] | None
    links: set[tuple[int, bytes]] = field(default_factory=set)
    lookups: int = 0


class InodeTable:
    """FUSE inode numbers <-> backing paths; see the module docstring."""

    def __init__(self, root: str) -> None:
        self.root = os.fsencode(os.path.abspath(root))
        self._nodes: dict[int, Node] = {ROOT: Node(key=None, lookups=1)}
        self._by_key: dict[tuple[int, int], int] = {}
        self._entries: dict[tuple[int, bytes], int] = {}
        self._children: dict[int, int] = {}  # parent inode -> number of known entries in it
        self._next = ROOT + 1

    def __len__(self) -> int:
        return len(self._nodes)

    def path(self, inode: int) -> bytes:
        """A backing path of ``inode`` (any of its hard links)."""
        parts: list[bytes] = []
        while inode != ROOT:
            node = self._nodes.get(inode)
            if node is None or not node.links:
                raise StaleInode(inode)
            inode, name = min(node.links)
            parts.append(name)
            if len(parts) > 4096:
                raise OSError(errno.ELOOP, "inode table cycle")
        return os.path.join(self.root, *reversed(parts)) if parts else self.root

    def child(self, parent: int, name: bytes) -> bytes:
        return os.path.join(self.path(parent), name)

    def known(self, inode: int) -> bool:
        return inode in self._nodes

    def add(self, parent: int, name: bytes, st: os.stat_result, lookups: int = 1) -> int:
        """Record entry ``name`` in ``parent`` for the file ``st``; returns its inode."""
        key = (st.st_dev, st.st_ino)
        inode = self._by_key.get(key)
        old = self._entries.get((parent, name))
        if old is not None and old != inode:
            self.remove_entry(parent, name)  # the name now leads to another file
        if inode is None:
            inode = self._next
            self._next += 1
            self._nodes[inode] = Node(key=key)
            self._by_key[key] = inode
        node = self._nodes[inode]
        self._link(inode, parent, name)
        node.lookups += lookups
        return inode

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
        node = self._nodes[inode]
        if not node.links and node.key is not None:
            # No entry left: a new file may reuse the backing inode number.
            if self._by_key.get(node.key) == inode:
                del self._by_key[node.key]
            node.key = None
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
        del self._nodes[inode]
        for parent, name in list(node.links):
            del self._entries[(parent, name)]
            left = self._children[parent] - 1
            if left:
                self._children[parent] = left
            else:
                del self._children[parent]
                self._drop_if_unused(parent)
        if node.key is not None and self._by_key.get(node.key) == inode:
            del self._by_key[node.key]
