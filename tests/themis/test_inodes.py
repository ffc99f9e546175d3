"""The inode table: paths follow renames of directories, hard links keep one inode."""

from __future__ import annotations

import os

import pytest

from themis.fs.inodes import ROOT, InodeTable, StaleInode


def test_paths_follow_directory_renames(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    t = InodeTable(str(tmp_path))
    a = t.add(ROOT, b"a", os.lstat(tmp_path / "a"))
    b = t.add(a, b"b", os.lstat(tmp_path / "a" / "b"))
    f = t.add(b, b"f", os.lstat(tmp_path / "a" / "b" / "f"))
    os.rename(tmp_path / "a", tmp_path / "z")
    t.rename(ROOT, b"a", ROOT, b"z")
    assert t.path(f) == os.fsencode(tmp_path / "z" / "b" / "f")


def test_hard_links_are_one_inode_and_survive_unlink(tmp_path):
    (tmp_path / "x").write_text("x")
    os.link(tmp_path / "x", tmp_path / "y")
    t = InodeTable(str(tmp_path))
    ix = t.add(ROOT, b"x", os.lstat(tmp_path / "x"))
    iy = t.add(ROOT, b"y", os.lstat(tmp_path / "y"))
    assert ix == iy
    t.remove_entry(ROOT, b"x")
    assert t.path(ix) == os.fsencode(tmp_path / "y")
    t.remove_entry(ROOT, b"y")
    with pytest.raises(StaleInode):
        t.path(ix)
    t.forget(ix, 2)
    assert not t.known(ix)


def test_rename_over_existing_and_exchange(tmp_path):
    for n in "pq":
        (tmp_path / n).write_text(n)
    t = InodeTable(str(tmp_path))
    ip = t.add(ROOT, b"p", os.lstat(tmp_path / "p"))
    iq = t.add(ROOT, b"q", os.lstat(tmp_path / "q"))
    t.exchange(ROOT, b"p", ROOT, b"q")
    assert t.entry(ROOT, b"p") == iq and t.entry(ROOT, b"q") == ip
    t.rename(ROOT, b"p", ROOT, b"q")  # q (ip) is replaced by iq
    assert t.entry(ROOT, b"q") == iq and t.entry(ROOT, b"p") is None
    with pytest.raises(StaleInode):
        t.path(ip)  # still known (kernel lookups) but nameless
    t.forget(ip, 1)
    assert not t.known(ip)


def test_forget_keeps_parents_of_known_entries(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("")
    t = InodeTable(str(tmp_path))
    d = t.add(ROOT, b"d", os.lstat(tmp_path / "d"))
    f = t.add(d, b"f", os.lstat(tmp_path / "d" / "f"))
    t.forget(d, 1)
    assert t.known(d)  # f still refers to it
    t.forget(f, 1)
    assert not t.known(f) and not t.known(d)
    assert len(t) == 1  # only the root


def test_reused_backing_inode_gets_a_new_fuse_inode(tmp_path):
    (tmp_path / "old").write_text("")
    t = InodeTable(str(tmp_path))
    st = os.lstat(tmp_path / "old")
    old = t.add(ROOT, b"old", st)
    t.remove_entry(ROOT, b"old")  # unlinked while the kernel still holds it
    new = t.add(ROOT, b"new", st)  # same (dev, ino) now belongs to another file
    assert new != old
