"""The inode table: one O_PATH descriptor per inode, hard links keep one inode, descriptors are
released when the kernel forgets an inode or its last name is removed."""

from __future__ import annotations

import os

import pytest

from themis.fs.inodes import ROOT, InodeTable, StaleInode


def opath(path) -> int:
    return os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)


def add(t: InodeTable, parent: int, name: str, path) -> int:
    fd = opath(path)
    return t.add(parent, name.encode(), os.fstat(fd), fd)


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_descriptors_follow_the_file_not_the_name(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    t = InodeTable(opath(tmp_path))
    a = add(t, ROOT, "a", tmp_path / "a")
    b = add(t, a, "b", tmp_path / "a" / "b")
    os.rename(tmp_path / "a", tmp_path / "z")  # behind the table's back
    os.symlink("/etc", tmp_path / "a")  # and a symlink where the directory was
    fd = os.open("f", os.O_RDONLY, dir_fd=t.fd(b))
    assert os.read(fd, 8) == b"x"
    os.close(fd)
    assert t.parent(b) == a and t.parent(a) == ROOT and t.parent(ROOT) == ROOT


def test_hard_links_are_one_inode_and_release_the_descriptor(tmp_path):
    (tmp_path / "x").write_text("x")
    os.link(tmp_path / "x", tmp_path / "y")
    t = InodeTable(opath(tmp_path))
    ix = add(t, ROOT, "x", tmp_path / "x")
    fd = t.fd(ix)
    iy = add(t, ROOT, "y", tmp_path / "y")  # the second descriptor is closed at once
    assert ix == iy and t.fd(ix) == fd
    t.remove_entry(ROOT, b"x")
    assert t.fd(ix) == fd  # still named y
    t.remove_entry(ROOT, b"y")
    assert t.fd(ix) == -1 and not is_open(fd)  # no name left: the space may be freed
    assert t.known(ix)  # the kernel still holds it (open files reach it by their own fds)
    t.forget(ix, 2)
    assert not t.known(ix)
    with pytest.raises(StaleInode):
        t.fd(ix)


def test_rename_over_existing_and_exchange(tmp_path):
    for n in "pq":
        (tmp_path / n).write_text(n)
    t = InodeTable(opath(tmp_path))
    ip = add(t, ROOT, "p", tmp_path / "p")
    iq = add(t, ROOT, "q", tmp_path / "q")
    t.exchange(ROOT, b"p", ROOT, b"q")
    assert t.entry(ROOT, b"p") == iq and t.entry(ROOT, b"q") == ip
    t.rename(ROOT, b"p", ROOT, b"q")  # q (ip) is replaced by iq
    assert t.entry(ROOT, b"q") == iq and t.entry(ROOT, b"p") is None
    with pytest.raises(StaleInode):
        t.parent(ip)  # still known (kernel lookups) but nameless
    t.forget(ip, 1)
    assert not t.known(ip)


def test_forget_keeps_parents_of_known_entries_and_closes(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("")
    t = InodeTable(opath(tmp_path))
    d = add(t, ROOT, "d", tmp_path / "d")
    f = add(t, d, "f", tmp_path / "d" / "f")
    dfd, ffd = t.fd(d), t.fd(f)
    t.forget(d, 1)
    assert t.known(d) and is_open(dfd)  # f still refers to it
    t.forget(f, 1)
    assert not t.known(f) and not t.known(d)
    assert not is_open(dfd) and not is_open(ffd)
    assert len(t) == 1  # only the root
    t.close_all()


def test_a_reused_inode_number_gets_a_new_inode(tmp_path):
    """ext4 hands a freed inode number out again at once: a symlink removed behind the
    table's back and a file created with its number must not share the symlink's descriptor
    (opening it would give ELOOP)."""
    os.symlink("/etc", tmp_path / "l")
    t = InodeTable(opath(tmp_path))
    link = add(t, ROOT, "l", tmp_path / "l")
    st_link = os.lstat(tmp_path / "l")
    os.unlink(tmp_path / "l")
    (tmp_path / "f").write_text("new")
    fd = opath(tmp_path / "f")
    real = os.fstat(fd)
    # the new file as it would look had it received the symlink's inode number
    fake = os.stat_result((real.st_mode, st_link.st_ino, st_link.st_dev, *tuple(real)[3:10]))
    f = t.add(ROOT, b"f", fake, fd)
    assert f != link
    assert t.fd(f) == fd and is_open(t.fd(link))
    # the same file looked up again keeps its inode
    again = opath(tmp_path / "f")
    assert t.add(ROOT, b"f", fake, again) == f


def _with_number(path, like: os.stat_result) -> tuple[int, os.stat_result]:
    """``path`` opened, and its stat as it would be had it received ``like``'s inode number."""
    fd = opath(path)
    real = os.fstat(fd)
    return fd, os.stat_result((real.st_mode, like.st_ino, like.st_dev, *tuple(real)[3:10]))


@pytest.mark.parametrize("old_kind", ["symlink", "file"])
def test_a_file_removed_through_the_mount_frees_its_number(tmp_path, old_kind):
    """The kernel still holds the removed file's inode (its forget has not come yet) when the
    backing file system gives the number to a new file: the new file gets its own inode. CI
    caught the symlink case as ELOOP in CPython's test_os on the mount."""
    old = tmp_path / "old"
    if old_kind == "symlink":
        os.symlink("nowhere", old)
    else:
        old.write_text("old")
    t = InodeTable(opath(tmp_path))
    first = add(t, ROOT, "old", old)
    st_old = os.lstat(old)
    os.unlink(old)
    t.remove_entry(ROOT, b"old")  # as the mount's unlink does
    (tmp_path / "new").write_text("new")
    fd, fake = _with_number(tmp_path / "new", st_old)
    new = t.add(ROOT, b"new", fake, fd)
    assert new != first and t.fd(new) == fd and t.known(first)
    assert t.add(ROOT, b"new", fake, opath(tmp_path / "new")) == new  # found again


def test_a_hard_link_the_table_never_saw_keeps_the_inode(tmp_path):
    (tmp_path / "x").write_text("x")
    os.link(tmp_path / "x", tmp_path / "hidden")
    t = InodeTable(opath(tmp_path))
    ix = add(t, ROOT, "x", tmp_path / "x")
    os.unlink(tmp_path / "x")
    t.remove_entry(ROOT, b"x")
    assert t.fd(ix) == -1  # no known name left, yet the file is still linked
    assert add(t, ROOT, "hidden", tmp_path / "hidden") == ix
    assert is_open(t.fd(ix))
