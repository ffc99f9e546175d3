"""The mount against the native file system: random sequences of file, link, symlink,
directory and rename operations (hypothesis's state machine) run side by side in the mount
and in a plain directory must give the same results and leave the same tree. Descriptors
held open keep the kernel's inodes alive while names come and go. (The bug this family of
tests grew from, ELOOP on a file that took a removed symlink's inode number, needs five
steps in a row; its own test is in test_fs_posix.py.)"""

from __future__ import annotations

import errno
import itertools
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

pytestmark = pytest.mark.fuse

NAMES = ["a", "b", "d/a", "e"]
DIRS = ["d", "e", "d/e"]
#: an absolute symlink target: a symlink renamed to "d" is then walked through ("d/a"), so it
#: must lead nowhere that exists (a real directory would be written to, as root)
OUTSIDE = "/nonexistent-themis-test/x"
_ROOTS: dict[str, Path] = {}
_COUNTER = itertools.count()


def outcome(call: Callable[[], object]) -> object:
    """What ``call`` returned, or the name of the errno it raised."""
    try:
        return call()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))


def tree(root: Path) -> dict[str, tuple[str, object]]:
    """Every entry below ``root``: its type and content (a symlink's target)."""
    out: dict[str, tuple[str, object]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            mode = os.lstat(path).st_mode
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                out[rel] = ("dir", None)
            else:
                out[rel] = ("file", path.read_bytes())
    return out


class MountAgainstNative(RuleBasedStateMachine):
    """One operation on both sides per step; the results must agree."""

    @initialize()
    def fresh_roots(self) -> None:
        n = next(_COUNTER)
        self.sides = [_ROOTS["mount"] / f"run{n}", _ROOTS["native"] / f"run{n}"]
        for side in self.sides:
            side.mkdir()
        self.held: list[list[int]] = [[], []]

    def both(self, op: Callable[[Path], object]) -> object:
        got = [outcome(lambda s=side: op(s)) for side in self.sides]
        assert got[0] == got[1], f"mount {got[0]!r}, native {got[1]!r}"
        return got[0]

    @rule(name=st.sampled_from(NAMES), data=st.binary(max_size=64))
    def write(self, name: str, data: bytes) -> None:
        self.both(lambda s: (s / name).write_bytes(data))

    @rule(name=st.sampled_from(NAMES))
    def read(self, name: str) -> None:
        self.both(lambda s: (s / name).read_bytes())

    @rule(name=st.sampled_from(NAMES), to=st.sampled_from(NAMES + [OUTSIDE, "nowhere"]))
    def symlink(self, name: str, to: str) -> None:
        self.both(lambda s: os.symlink(to, s / name))

    @rule(name=st.sampled_from(NAMES))
    def readlink(self, name: str) -> None:
        self.both(lambda s: os.readlink(s / name))

    @rule(old=st.sampled_from(NAMES), new=st.sampled_from(NAMES))
    def link(self, old: str, new: str) -> None:
        self.both(lambda s: os.link(s / old, s / new, follow_symlinks=False))

    @rule(name=st.sampled_from(NAMES))
    def unlink(self, name: str) -> None:
        self.both(lambda s: os.unlink(s / name))

    @rule(name=st.sampled_from(DIRS))
    def mkdir(self, name: str) -> None:
        self.both(lambda s: os.mkdir(s / name))

    @rule(name=st.sampled_from(DIRS))
    def rmdir(self, name: str) -> None:
        self.both(lambda s: os.rmdir(s / name))

    @rule(old=st.sampled_from(NAMES + DIRS), new=st.sampled_from(NAMES + DIRS))
    def rename(self, old: str, new: str) -> None:
        self.both(lambda s: os.rename(s / old, s / new))

    @rule(name=st.sampled_from(NAMES + DIRS))
    def hold(self, name: str) -> None:
        """An O_PATH descriptor: the kernel keeps the inode while the name may go."""
        fds = [
            outcome(lambda s=side: os.open(s / name, os.O_PATH | os.O_NOFOLLOW))
            for side in self.sides
        ]
        assert isinstance(fds[0], int) == isinstance(fds[1], int), fds
        if isinstance(fds[0], int):
            for held, fd in zip(self.held, fds, strict=True):
                held.append(fd)  # type: ignore[arg-type]

    @rule()
    def release(self) -> None:
        for held in self.held:
            if held:
                os.close(held.pop(0))

    @rule(name=st.sampled_from(NAMES + DIRS))
    def kind(self, name: str) -> None:
        self.both(lambda s: (stat.S_IFMT(os.lstat(s / name).st_mode), os.lstat(s / name).st_nlink))

    @rule(a=st.sampled_from(NAMES), b=st.sampled_from(NAMES))
    def same_file(self, a: str, b: str) -> None:
        """Hard links are one inode on both sides, other files two."""
        self.both(lambda s: os.lstat(s / a).st_ino == os.lstat(s / b).st_ino)

    @invariant()
    def same_tree(self) -> None:
        if hasattr(self, "sides"):
            assert tree(self.sides[0]) == tree(self.sides[1])

    def teardown(self) -> None:
        for held in getattr(self, "held", []):
            for fd in held:
                os.close(fd)


def test_mount_agrees_with_the_native_file_system(themis, fuse_root):
    assert not Path(OUTSIDE).parent.exists()
    # the native side on another file system (tmpfs where there is one), so that its files
    # never take the inode numbers the backing file system frees for the mount's next ones
    shm = Path("/dev/shm")
    native = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else fuse_root / "native"
    native.mkdir(exist_ok=True)
    _ROOTS.update(mount=themis.mnt, native=native)
    run_state_machine_as_test(
        MountAgainstNative,
        settings=settings(
            max_examples=80,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
    shutil.rmtree(native, ignore_errors=True)
    assert "Traceback" not in themis.logs()
