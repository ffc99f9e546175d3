"""The daemon on real mounts: vanished backing store, full disk, permission errors, SIGHUP
reload with I/O in flight, clean SIGTERM unmount, restart over a stale mount."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.themis.fusehelp import start_themis
from themis.fs import fusectl
from themis.fs.fusectl import is_mounted

pytestmark = pytest.mark.fuse

MiB = 1 << 20


def wait_for(predicate, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_backing_directory_vanishes_and_returns(themis):
    (themis.mnt / "d").mkdir()
    (themis.mnt / "d" / "f").write_bytes(b"x")
    held = open(themis.mnt / "d" / "f", "rb")  # noqa: SIM115 - kept open across the removal
    shutil.rmtree(themis.backing)
    time.sleep(1.2)  # past the kernel's attribute/entry cache (1 s)
    for call in (
        lambda: os.stat(themis.mnt / "d" / "f"),
        lambda: os.open(themis.mnt / "new", os.O_CREAT | os.O_WRONLY),
        lambda: os.listdir(themis.mnt / "d"),
    ):
        with pytest.raises(OSError) as info:
            call()
        assert info.value.errno in (errno.ENOENT, errno.ESTALE)
    assert held.read() == b"x"  # an open file keeps working
    held.close()
    assert themis.proc.poll() is None
    assert wait_for(lambda: themis.sample("themis_backing_available") == 0.0)
    assert "backing directory" in themis.logs() and "is gone" in themis.logs()
    themis.backing.mkdir()
    assert wait_for(lambda: themis.sample("themis_backing_available") == 1.0)
    time.sleep(1.2)  # let the attribute/entry caches (1 s) expire
    (themis.mnt / "again").write_bytes(b"y")
    assert (themis.backing / "again").read_bytes() == b"y"
    assert "Traceback" not in themis.logs()


def test_full_disk_passes_enospc(fuse_root):
    small = fuse_root / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)], check=True)
    try:
        mount = start_themis(fuse_root, backing=small)
        try:
            with pytest.raises(OSError) as info, open(mount.mnt / "fill", "wb") as f:
                for _ in range(4):
                    f.write(os.urandom(MiB))
                    f.flush()
            assert info.value.errno == errno.ENOSPC
            os.unlink(mount.mnt / "fill")
            (mount.mnt / "small").write_bytes(b"fits")
            assert (small / "small").read_bytes() == b"fits"
            assert mount.proc.poll() is None
        finally:
            assert mount.stop() == 0
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


def test_backing_store_permission_errors(fuse_root):
    ro = fuse_root / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(ro)], check=True)
    (ro / "file").write_text("data")
    subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
    try:
        mount = start_themis(fuse_root, backing=ro)
        try:
            assert (mount.mnt / "file").read_text() == "data"
            with pytest.raises(OSError) as info:
                (mount.mnt / "new").write_text("x")
            assert info.value.errno == errno.EROFS
            with pytest.raises(OSError) as info:
                os.chmod(mount.mnt / "file", 0o600)
            assert info.value.errno == errno.EROFS
            assert mount.proc.poll() is None
        finally:
            mount.stop()
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)


def test_immutable_backing_file_gives_eperm(themis):
    (themis.mnt / "frozen").write_text("x")
    if subprocess.run(["chattr", "+i", str(themis.backing / "frozen")]).returncode != 0:
        pytest.skip("the backing file system has no immutable flag")
    try:
        with pytest.raises(PermissionError) as info:
            os.open(themis.mnt / "frozen", os.O_WRONLY)
        assert info.value.errno == errno.EPERM
        with pytest.raises(PermissionError):
            os.unlink(themis.mnt / "frozen")
    finally:
        subprocess.run(["chattr", "-i", str(themis.backing / "frozen")], check=True)
    assert themis.proc.poll() is None


WRITER = """
import hashlib, os, sys
path, total = sys.argv[1], int(sys.argv[2])
h = hashlib.sha256()
with open(path, "wb") as f:
    for i in range(total):
        block = bytes([i % 251]) * (1 << 20)
        f.write(block)
        h.update(block)
print(h.hexdigest())
"""


def test_sighup_reloads_policy_without_dropping_io(fuse_root):
    config = fuse_root / "themis.toml"
    config.write_text(
        '[scheduler]\npolicy = "job-fair"\n[device]\n'
        "bandwidth_bytes_per_second = 40_000_000\n[metrics]\nupdate_seconds = 0.1\n"
    )
    mount = start_themis(fuse_root, config=config)
    try:
        writers = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(mount.mnt / f"w{i}"), "40"],
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        assert wait_for(lambda: (mount.sample("themis_io_bytes_total", op="write") or 0) > 4 * MiB)
        config.write_text(config.read_text().replace("job-fair", "size-fair"))
        mount.signal(signal.SIGHUP)
        assert wait_for(lambda: mount.sample("themis_policy_info", policy="size-fair") == 1.0)
        assert all(w.poll() is None for w in writers), "the reload must happen with I/O in flight"
        config.write_text('[scheduler]\npolicy = "no-such-policy"\n')
        mount.signal(signal.SIGHUP)
        assert wait_for(lambda: mount.sample("themis_reloads_total", outcome="error") == 1.0)
        for i, w in enumerate(writers):
            out, _ = w.communicate(timeout=60)
            assert w.returncode == 0
            data = (mount.backing / f"w{i}").read_bytes()
            assert len(data) == 40 * MiB
            assert hashlib.sha256(data).hexdigest() == out.strip()
        assert mount.sample("themis_reloads_total", outcome="ok") == 1.0
        assert mount.sample("themis_policy_info", policy="size-fair") == 1.0
        assert "no-such-policy" in mount.logs() and "scheduler.policy" in mount.logs()
    finally:
        assert mount.stop() == 0


def test_sigterm_unmounts_and_restart_clears_a_stale_mount(fuse_root):
    mount = start_themis(fuse_root)
    (mount.mnt / "kept").write_text("k")
    mount.proc.send_signal(signal.SIGKILL)
    mount.proc.wait()
    with pytest.raises(OSError) as info:
        os.stat(mount.mnt / "kept")
    assert info.value.errno == errno.ENOTCONN
    again = start_themis(fuse_root)  # the new daemon clears the dead mount and serves again
    assert (again.mnt / "kept").read_text() == "k"
    assert again.stop() == 0
    assert not is_mounted(again.mnt)
    assert "unmounted" in again.logs()


def test_bad_config_is_a_clear_error_not_a_traceback(fuse_root):
    config = fuse_root / "bad.toml"
    config.write_text("[scheduler]\nmax_inflight = 0\n")
    (fuse_root / "b").mkdir()
    (fuse_root / "m").mkdir()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "themis.cli",
            "mount",
            str(fuse_root / "b"),
            str(fuse_root / "m"),
            "--config",
            str(config),
            "--foreground",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "scheduler.max_inflight" in out.stderr and str(config) in out.stderr
    assert "Traceback" not in out.stderr


def test_detached_daemon_reports_mount_and_stops(fuse_root):
    (fuse_root / "backing").mkdir()
    (fuse_root / "mnt").mkdir()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "themis.cli",
            "mount",
            str(fuse_root / "backing"),
            str(fuse_root / "mnt"),
            "--log-file",
            str(fuse_root / "d.log"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert is_mounted(fuse_root / "mnt")
    pid = int(
        next(
            line.split("themis[")[1].split("]")[0]
            for line in Path(fuse_root / "d.log").read_text().splitlines()
            if "mounted" in line
        )
    )
    os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: not is_mounted(fuse_root / "mnt"))


def test_systemd_notify_protocol(fuse_root):
    address = str(fuse_root / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(address)
        sock.settimeout(20)
        mount = start_themis(fuse_root, env={"NOTIFY_SOCKET": address})
        try:
            assert sock.recv(4096).decode().startswith("READY=1")
            mount.signal(signal.SIGHUP)
            assert sock.recv(4096) == b"RELOADING=1"
            assert sock.recv(4096) == b"READY=1"
        finally:
            mount.stop()
        assert sock.recv(4096) == b"STOPPING=1"


def test_kernel_background_limit_is_raised(themis):
    minor = fusectl.connection_id(str(themis.mnt))
    assert minor == os.minor(os.stat(themis.mnt).st_dev)
    limit = fusectl.FUSECTL / str(minor) / "max_background"
    assert wait_for(lambda: limit.exists() and limit.read_text().strip() == "64")


def test_connection_id_reads_escaped_mountinfo(tmp_path):
    info = tmp_path / "mountinfo"
    info.write_text(
        "36 35 0:39 / /tmp/a\\040b rw,nosuid - fuse.themis themis rw\n"
        "37 35 0:40 / /tmp/a\\040b rw - fuse.themis themis rw\n"
    )
    assert fusectl.connection_id("/tmp/a b", str(info)) == 40
    assert fusectl.connection_id("/tmp/none", str(info)) is None


def test_threaded_backend_io_round_trip(fuse_root):
    config = fuse_root / "themis.toml"
    config.write_text("[scheduler]\nio_threads = 4\nchunk_bytes = 65536\n")
    mount = start_themis(fuse_root, config=config)
    try:
        data = os.urandom(8 * MiB + 123)
        (mount.mnt / "t").write_bytes(data)
        assert (mount.backing / "t").read_bytes() == data
        assert (mount.mnt / "t").read_bytes() == data
    finally:
        assert mount.stop() == 0
