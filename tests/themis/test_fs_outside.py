"""Outside programs on a real mount: CPython's own file-system tests, fio with crc32c
verification under every policy and dispatcher, fallocate, and the restart race (SIGKILL, then
``themis mount`` at once, ten times)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import pytest

from tests.themis.fusehelp import REPO, start_themis
from themis.fs import fusectl
from themis.fs.fusectl import is_mounted
from themis.fs.syscalls import fallocate
from themis.sched.policy import POLICIES
from themis.sched.registry import DISPATCHERS

pytestmark = pytest.mark.fuse

MiB = 1 << 20
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2


def test_fallocate_is_passed_through(themis):
    path = themis.mnt / "alloc"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.posix_fallocate(fd, 0, 8 * MiB)
        assert os.fstat(fd).st_size == 8 * MiB
        backing = themis.backing / "alloc"
        assert backing.stat().st_blocks * 512 >= 8 * MiB  # really allocated, not sparse
        fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, 4 * MiB)
        assert backing.stat().st_blocks * 512 < 5 * MiB
        assert os.pread(fd, 16, 0) == bytes(16)
        assert os.fstat(fd).st_size == 8 * MiB
    finally:
        os.close(fd)


@pytest.mark.slow
def test_restart_race_ten_times(fuse_root):
    """SIGKILL the daemon, then start a new one at once (the root's attributes still cached):
    it must replace the dead mount, not stack on it, every time; a stop leaves nothing."""
    mount = start_themis(fuse_root)
    (mount.mnt / "kept").write_text("k")
    for i in range(10):
        os.stat(mount.mnt)  # cache the root's attributes, as a busy node would
        mount.proc.send_signal(signal.SIGKILL)
        mount.proc.wait()
        mount = start_themis(fuse_root)
        mounts = fusectl.fuse_mounts(str(mount.mnt))
        assert len(mounts) == 1, f"round {i}: {len(mounts)} FUSE mounts stacked"
        assert (mount.mnt / "kept").read_text() == "k", f"round {i}"
        assert "clearing the dead FUSE mount" in mount.logs(), f"round {i}"
    assert mount.stop() == 0
    assert not is_mounted(mount.mnt) and not fusectl.fuse_mounts(str(mount.mnt))
    assert (fuse_root / "mnt").is_dir()  # no dead mount left behind (no ENOTCONN)


def test_a_live_mount_is_not_stacked_on(themis, fuse_root):
    other = subprocess.run(
        [
            sys.executable,
            "-m",
            "themis.cli",
            "mount",
            str(themis.backing),
            str(themis.mnt),
            "--foreground",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert other.returncode == 1
    assert "already served by a running FUSE daemon" in other.stderr
    assert len(fusectl.fuse_mounts(str(themis.mnt))) == 1
    assert themis.proc.poll() is None


CPYTHON_TESTS = ["test_os", "test_shutil", "test_tempfile", "test_glob", "test_fileio"]


@pytest.mark.slow
def test_cpython_file_system_tests_on_the_mount(themis):
    """CPython's own tests of os, shutil, tempfile, glob and io.FileIO, run inside the mount."""
    work = themis.mnt / "cpython"
    work.mkdir()
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "test", *CPYTHON_TESTS, "-j2"],  # two at once: both cores busy
        cwd=work,
        env=dict(os.environ, TMPDIR=str(work)),
        capture_output=True,
        text=True,
        timeout=280,
    )
    took = time.monotonic() - started
    tail = out.stdout[-3000:] + out.stderr[-2000:]
    assert out.returncode == 0, tail
    assert "Result: SUCCESS" in out.stdout, tail
    print(f"CPython file-system tests on the mount: {took:.1f} s")
    assert "Traceback" not in themis.logs()


def fio(directory: Path, name: str, env: dict[str, str], size_mb: int = 6) -> subprocess.Popen:
    cmd = [
        "fio",
        f"--name={name}",
        f"--directory={directory}",
        "--rw=randwrite",
        "--bsrange=4k-1m",
        "--bs_unaligned",
        f"--size={size_mb}m",
        "--numjobs=2",
        "--ioengine=psync",
        "--verify=crc32c",
        "--verify_fatal=1",
        "--do_verify=1",
        "--output-format=json",
    ]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def switch(mount, config: Path, policy: str, dispatcher: str) -> None:
    options = {"tbf": "rate = 2e9\n", "gift": "capacity = 2e9\n"}.get(dispatcher, "")
    text = (
        f"[tagging]\ntrust_environment = true\n[metrics]\nupdate_seconds = 0.05\n"
        f'[scheduler]\npolicy = "{policy}"\ndispatcher = "{dispatcher}"\n'
    )
    if options:
        text += "[scheduler.dispatcher_options]\n" + options
    config.write_text(text)
    mount.signal(signal.SIGHUP)
    shown = "fifo" if policy == "fifo" else dispatcher  # the fifo policy always dispatches fifo
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if mount.sample("themis_policy_info", policy=policy, dispatcher=shown) == 1.0:
                return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"the daemon did not switch to {policy}/{dispatcher}:\n{mount.logs()}")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio (scripts/setup.sh)")
def test_fio_verifies_under_every_policy_and_dispatcher(fuse_root):
    """Two jobs (1 and 4 nodes) with two fio processes each write random blocks of 4 KiB-1 MiB
    and read them back with crc32c checks, under each of the 30 policy/dispatcher settings (the
    fifo policy dispatches fifo whatever the setting, so 26 distinct pairs)."""
    config = fuse_root / "themis.toml"
    config.write_text("[tagging]\ntrust_environment = true\n")
    mount = start_themis(fuse_root, config=config)
    try:
        for policy in POLICIES:
            for dispatcher in DISPATCHERS:
                switch(mount, config, policy, dispatcher)
                where = mount.mnt / f"{policy}-{dispatcher}"
                where.mkdir()
                runs = [
                    fio(where, f"job{jid}", dict(os.environ, SLURM_JOB_ID=jid, SLURM_NNODES=nodes))
                    for jid, nodes in (("61", "1"), ("64", "4"))
                ]
                for run in runs:
                    out, err = run.communicate(timeout=120)
                    assert run.returncode == 0, (policy, dispatcher, err[-2000:])
                    report = json.loads(out[out.index("{") :])
                    assert all(j["error"] == 0 for j in report["jobs"]), (policy, dispatcher)
                    assert (
                        sum(j["write"]["io_bytes"] for j in report["jobs"]) >= 11 * MiB
                    )  # random block sizes: the last one may not fit
                shutil.rmtree(where)
        for job in ("61", "64"):
            assert (
                mount.sample("themis_io_bytes_total", slurm_job=job, op="write") or 0
            ) >= 30 * 11 * MiB
        assert mount.sample("themis_job_nodes", slurm_job="64") == 4.0
        assert "Traceback" not in mount.logs()
    finally:
        assert mount.stop() == 0
