"""POSIX behaviour of the passthrough on a real FUSE mount (as root, with other uids)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from hpcbase.asuser import run_as
from themis.fs.syscalls import AT_FDCWD, RENAME_EXCHANGE, RENAME_NOREPLACE, renameat2

pytestmark = pytest.mark.fuse

NOBODY = 65534
GiB = 1 << 30


def errno_as(uid: int, call: str) -> str:
    """Run one os call as ``uid``; returns "ok" or the errno name."""
    code = (
        "import os, errno\ntry:\n    "
        + call
        + "\n    print('ok')\nexcept OSError as e:\n    print(errno.errorcode[e.errno])"
    )
    out = run_as(uid, code)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_sparse_file_larger_than_4gib(themis):
    path = themis.mnt / "big"
    with open(path, "wb") as f:
        f.seek(5 * GiB)
        f.write(b"tail")
    assert path.stat().st_size == 5 * GiB + 4
    backing = themis.backing / "big"
    assert backing.stat().st_size == 5 * GiB + 4
    assert backing.stat().st_blocks * 512 < 1 << 20  # still sparse
    with open(path, "rb") as f:
        f.seek(5 * GiB - 2)
        assert f.read(6) == b"\0\0tail"
        f.seek(4 * GiB + 123)
        assert f.read(16) == bytes(16)
    os.truncate(path, 4 * GiB + 1)
    assert os.stat(path).st_size == 4 * GiB + 1


def test_thousands_of_files(themis):
    d = themis.mnt / "many"
    d.mkdir()
    names = [f"f{i:05d}" for i in range(2500)]
    for name in names:
        (d / name).write_bytes(name.encode())
    assert sorted(os.listdir(d)) == names
    assert sorted(os.listdir(themis.backing / "many")) == names
    assert (d / "f01234").read_bytes() == b"f01234"
    assert sum(1 for e in os.scandir(d) if e.is_file()) == len(names)
    for name in names:
        (d / name).unlink()
    d.rmdir()
    assert not (themis.backing / "many").exists()


def test_rename_over_existing_file_and_open_handles(themis):
    a, b = themis.mnt / "a", themis.mnt / "b"
    a.write_bytes(b"new")
    b.write_bytes(b"old")
    with open(b, "rb") as held:
        os.rename(a, b)
        assert held.read() == b"old"  # the replaced file stays readable while open
    assert b.read_bytes() == b"new"
    assert not a.exists()
    assert (themis.backing / "b").read_bytes() == b"new"


def test_rename_directory_moves_its_children(themis):
    (themis.mnt / "d1" / "sub").mkdir(parents=True)
    (themis.mnt / "d1" / "sub" / "f").write_bytes(b"x")
    st_before = os.stat(themis.mnt / "d1" / "sub" / "f")
    os.rename(themis.mnt / "d1", themis.mnt / "d2")
    f = themis.mnt / "d2" / "sub" / "f"
    assert f.read_bytes() == b"x"
    f.write_bytes(b"yz")  # an inode the kernel already knows, under its new path
    assert (themis.backing / "d2" / "sub" / "f").read_bytes() == b"yz"
    assert os.stat(f).st_ino == st_before.st_ino
    assert not (themis.mnt / "d1").exists()


def test_hard_links_share_an_inode_across_renames(themis):
    x = themis.mnt / "x"
    x.write_bytes(b"1")
    os.link(x, themis.mnt / "y")
    os.rename(x, themis.mnt / "z")
    y, z = themis.mnt / "y", themis.mnt / "z"
    assert os.stat(y).st_ino == os.stat(z).st_ino
    assert os.stat(y).st_nlink == 2
    y.write_bytes(b"22")
    assert z.read_bytes() == b"22"
    y.unlink()
    assert z.read_bytes() == b"22"
    assert os.stat(z).st_nlink == 1


def test_rename_noreplace_and_exchange(themis):
    p, q = themis.mnt / "p", themis.mnt / "q"
    p.write_bytes(b"P")
    q.write_bytes(b"Q")
    with pytest.raises(FileExistsError):
        renameat2(AT_FDCWD, bytes(p), AT_FDCWD, bytes(q), RENAME_NOREPLACE)
    renameat2(AT_FDCWD, bytes(p), AT_FDCWD, bytes(q), RENAME_EXCHANGE)
    assert p.read_bytes() == b"Q" and q.read_bytes() == b"P"
    renameat2(AT_FDCWD, bytes(p), AT_FDCWD, bytes(themis.mnt / "r"), RENAME_NOREPLACE)
    assert (themis.mnt / "r").read_bytes() == b"Q"


def test_errors_pass_through(themis):
    m = themis.mnt
    (m / "dir" / "inner").mkdir(parents=True)
    (m / "file").write_bytes(b"f")
    cases = [
        (lambda: os.open(m / "missing", os.O_RDONLY), errno.ENOENT),
        (lambda: os.mkdir(m / "dir"), errno.EEXIST),
        (lambda: os.open(m / "file", os.O_CREAT | os.O_EXCL | os.O_WRONLY), errno.EEXIST),
        (lambda: os.rmdir(m / "dir"), errno.ENOTEMPTY),
        (lambda: os.rmdir(m / "file"), errno.ENOTDIR),
        (lambda: os.unlink(m / "dir"), errno.EISDIR),
        (lambda: os.readlink(m / "file"), errno.EINVAL),
        (lambda: os.getxattr(m / "file", "user.none"), errno.ENODATA),
        (lambda: os.rename(m / "dir", m / "dir" / "inner" / "loop"), errno.EINVAL),
    ]
    for call, want in cases:
        with pytest.raises(OSError) as info:
            call()
        assert info.value.errno == want, (call, info.value)
    assert themis.proc.poll() is None  # the daemon is still up


def test_metadata_operations(themis):
    f = themis.mnt / "meta"
    f.write_bytes(b"0123456789")
    os.chmod(f, 0o640)
    assert os.stat(themis.backing / "meta").st_mode & 0o777 == 0o640
    os.chown(f, 1234, 5678)
    st = os.stat(themis.backing / "meta")
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    os.utime(f, ns=(1_000_000_000, 2_000_000_000))
    assert os.stat(f).st_mtime_ns == 2_000_000_000
    os.truncate(f, 3)
    assert f.read_bytes() == b"012"
    os.symlink("meta", themis.mnt / "link")
    assert os.readlink(themis.mnt / "link") == "meta"
    assert (themis.mnt / "link").read_bytes() == b"012"
    os.setxattr(f, "user.k", b"v")
    assert os.getxattr(f, "user.k") == b"v"
    assert "user.k" in os.listxattr(f)
    os.removexattr(f, "user.k")
    assert "user.k" not in os.listxattr(f)
    fd = os.open(f, os.O_RDWR)
    try:
        os.write(fd, b"abc")
        os.fsync(fd)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    sv, native = os.statvfs(themis.mnt), os.statvfs(themis.backing)
    assert (sv.f_bsize, sv.f_blocks) == (native.f_bsize, native.f_blocks)


def test_append_and_unlinked_open_file(themis):
    f = themis.mnt / "log"
    f.write_bytes(b"a")
    with open(f, "ab") as out:
        out.write(b"b")
    assert f.read_bytes() == b"ab"
    with open(f, "r+b") as held:
        f.unlink()
        held.write(b"Z")
        held.flush()
        assert os.fstat(held.fileno()).st_nlink == 0
        held.seek(0)
        assert held.read() == b"Zb"


def test_a_removed_symlinks_inode_number_on_a_new_file(themis):
    """ext4 gives a removed symlink's inode number to the next file at once. While the kernel
    still holds the symlink's inode, the new file must open as a file, not ELOOP."""
    reused = 0
    for _ in range(20):
        os.symlink("nowhere", themis.mnt / "x")
        held = os.open(themis.mnt / "x", os.O_PATH | os.O_NOFOLLOW)  # the kernel keeps it
        number = os.lstat(themis.backing / "x").st_ino
        os.unlink(themis.mnt / "x")
        (themis.mnt / "x").write_bytes(b"file")
        reused += os.lstat(themis.backing / "x").st_ino == number
        assert (themis.mnt / "x").read_bytes() == b"file"
        os.close(held)
        os.unlink(themis.mnt / "x")
    print(f"inode number reused {reused} of 20 times")


def test_permissions_are_enforced_for_other_uids(themis):
    m = themis.mnt
    secret = m / "secret"
    secret.write_bytes(b"s")
    secret.chmod(0o600)
    (m / "ro").mkdir(mode=0o755)
    (m / "shared").mkdir()
    (m / "shared").chmod(0o777)
    assert errno_as(NOBODY, f"open({str(secret)!r}).read()") == "EACCES"
    assert errno_as(NOBODY, f"open({str(m / 'ro' / 'x')!r}, 'w')") == "EACCES"
    assert errno_as(NOBODY, f"os.chmod({str(secret)!r}, 0o666)") == "EPERM"
    assert errno_as(NOBODY, f"os.unlink({str(secret)!r})") == "EACCES"
    assert errno_as(NOBODY, f"open({str(m / 'shared' / 'mine')!r}, 'w').write('x')") == "ok"
    st = os.stat(themis.backing / "shared" / "mine")
    assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)  # created as the caller, not as root
    assert errno_as(NOBODY, f"os.mkdir({str(m / 'shared' / 'd')!r})") == "ok"
    assert os.stat(themis.backing / "shared" / "d").st_uid == NOBODY
    secret.chmod(0o644)
    assert errno_as(NOBODY, f"open({str(secret)!r}).read()") == "ok"


def test_daemon_log_has_no_tracebacks(themis):
    (themis.mnt / "x").write_bytes(b"x")
    with pytest.raises(FileNotFoundError):
        os.stat(themis.mnt / "nope")
    assert "Traceback" not in themis.logs()
    assert Path(themis.mnt / "x").read_bytes() == b"x"
