"""The compiled data path (themis/fs/_datapath.c) on a real mount: data served in C, chunked at
chunk_bytes, per-job counters at scrape time, device emulation, both ways of unmounting, and the
Python data path it replaces giving the same bytes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.themis.fusehelp import ThemisMount, is_mounted, start_themis

MiB = 1 << 20


def _config(root: Path, text: str) -> Path:
    path = root / "themis.toml"
    path.write_text(text)
    return path


def _roundtrip(mount: ThemisMount) -> bytes:
    """Write 2.5 chunks at an odd offset, read back, fsync, punch a hole; returns the file."""
    data = os.urandom(5 * MiB // 2 + 123)
    path = mount.mnt / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        assert os.pwrite(fd, data, 4097) == len(data)
        os.fsync(fd)
        os.fdatasync(fd)
        assert os.pread(fd, len(data) + 10, 4097) == data  # short at end of file
        os.posix_fallocate(fd, 0, 8 * MiB)
        assert os.fstat(fd).st_size == 8 * MiB
    finally:
        os.close(fd)
    return (mount.backing / "f").read_bytes()


def test_data_served_in_c_with_per_job_counters(fuse_root: Path) -> None:
    mount = start_themis(fuse_root, "--log-level", "info")
    try:
        content = _roundtrip(mount)
        assert "compiled data path" in mount.logs()
        assert content[4097 : 4097 + 10] != b"\0" * 10
        writes = mount.sample("themis_io_bytes_total", op="write")
        reads = mount.sample("themis_io_bytes_total", op="read")
        assert writes is not None and writes >= 5 * MiB // 2 + 123
        assert reads is not None and reads >= 5 * MiB // 2 + 123
        assert mount.sample("themis_io_queue_wait_seconds_total") is not None
        assert 'job="' not in mount.scrape().replace('slurm_job="', "")
    finally:
        assert mount.stop() == 0


def test_python_data_path_writes_the_same_bytes(fuse_root: Path) -> None:
    cfg = _config(fuse_root, '[mount]\ndatapath = "python"\n')
    mount = start_themis(fuse_root, "--log-level", "info", config=cfg)
    try:
        content = _roundtrip(mount)
        assert "compiled data path" not in mount.logs()
        assert len(content) == 8 * MiB
        assert mount.sample("themis_io_bytes_total", op="write") is not None
    finally:
        assert mount.stop() == 0


def test_device_emulation_paces_the_compiled_path(fuse_root: Path) -> None:
    mount = start_themis(fuse_root, "--device-bandwidth", str(20 * MiB))
    try:
        start = time.monotonic()
        (mount.mnt / "g").write_bytes(b"x" * (10 * MiB))
        elapsed = time.monotonic() - start
        assert elapsed >= 0.4, elapsed  # 10 MiB at 20 MiB/s: 0.5 s
    finally:
        assert mount.stop() == 0


def test_external_unmount_ends_the_daemon(fuse_root: Path) -> None:
    mount = start_themis(fuse_root)
    (mount.mnt / "h").write_bytes(b"data")
    subprocess.run(["fusermount3", "-u", str(mount.mnt)], check=True)
    assert mount.proc.wait(timeout=20) == 0
    assert not is_mounted(mount.mnt)
    assert "Traceback" not in mount.logs()


def test_writeback_cache_keeps_data_and_append(fuse_root: Path) -> None:
    cfg = _config(fuse_root, "[mount]\nwriteback_cache = true\n")
    mount = start_themis(fuse_root, config=cfg)
    try:
        path = mount.mnt / "w"
        with open(path, "wb") as f:  # write-only: the kernel may read to fill pages
            f.write(b"a" * 5000)
        with open(path, "ab") as f:
            f.write(b"b" * 10)
        with open(path, "r+b") as f:
            f.seek(100)
            f.write(b"c")
        assert (mount.backing / "w").read_bytes() == b"a" * 100 + b"c" + b"a" * 4899 + b"b" * 10
    finally:
        assert mount.stop() == 0


def test_cache_of_unchanged_files_is_reused_and_changes_are_seen(fuse_root: Path) -> None:
    cfg = _config(fuse_root, "[mount]\ncache_unchanged = true\n")
    mount = start_themis(fuse_root, config=cfg)
    try:
        path = mount.mnt / "c"
        path.write_bytes(b"a" * 8192)
        assert path.read_bytes() == b"a" * 8192
        before = mount.sample("themis_io_bytes_total", op="read") or 0.0
        assert path.read_bytes() == b"a" * 8192  # unchanged since its last close: cached
        assert (mount.sample("themis_io_bytes_total", op="read") or 0.0) == before
        time.sleep(0.01)
        (mount.backing / "c").write_bytes(b"b" * 8192)  # changed behind the mount's back
        assert path.read_bytes() == b"b" * 8192
    finally:
        assert mount.stop() == 0


def test_spliced_writes_give_the_same_bytes_as_copied_ones(fuse_root: Path) -> None:
    """Write data taken from /dev/fuse by splice (the default) and by copy: the same files,
    with chunks smaller than a request, unaligned offsets, and O_APPEND (no splice there)."""
    data = os.urandom(3 * MiB + 777)
    got = []
    for splice in ("true", "false"):
        cfg = _config(
            fuse_root, f"[mount]\nsplice_writes = {splice}\n[scheduler]\nchunk_bytes = 262144\n"
        )
        mount = start_themis(fuse_root, config=cfg)
        try:
            for name in ("s", "a"):
                (mount.backing / name).unlink(missing_ok=True)
            fd = os.open(mount.mnt / "s", os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                assert os.pwrite(fd, data, 12345) == len(data)
                assert os.pwrite(fd, data[:70000], 3) == 70000  # overwrite, spliced too
            finally:
                os.close(fd)
            fd = os.open(mount.mnt / "a", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                for piece in (data[: MiB + 5], data[MiB + 5 :]):
                    assert os.write(fd, piece) == len(piece)
            finally:
                os.close(fd)
            got.append(((mount.backing / "s").read_bytes(), (mount.backing / "a").read_bytes()))
            assert mount.sample("themis_io_bytes_total", op="write") >= 2 * len(data)
        finally:
            assert mount.stop() == 0
    (spliced, appended), (copied, appended_copy) = got
    assert spliced == copied
    assert spliced[3:70003] == data[:70000] and spliced[12345 + 70000 - 3 :] == data[70000 - 3 :]
    assert appended == appended_copy == data
