"""Tagging a requesting pid with its Slurm job: a fake /proc for the logic, real processes too."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from themis.tagging import Tagger, in_job, pseudo_tag


def fake_proc(root: Path, pid: int, *, tgid: int | None = None, start: int = 1000,
              cgroup: str = "0::/user.slice\n", env: dict[str, str] | None = None) -> None:
    d = root / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    (d / "status").write_text(f"Name:\tx\nTgid:\t{tgid or pid}\nPid:\t{pid}\n")
    fields = ["S"] + ["0"] * 18 + [str(start)] + ["0"] * 10
    (d / "stat").write_text(f"{pid} (a b) c) " + " ".join(fields) + "\n")
    (d / "cgroup").write_text(cgroup)
    raw = b"".join(f"{k}={v}".encode() + b"\0" for k, v in (env or {}).items())
    (d / "environ").write_bytes(raw)


def test_cgroup_job_wins_over_environment(tmp_path):
    fake_proc(tmp_path, 10, cgroup="12:memory:/slurm/uid_1000/job_4242/step_0\n",
              env={"SLURM_JOB_ID": "999", "SLURM_JOB_NUM_NODES": "4"})
    tag = Tagger(tmp_path, node_count=None).tag(10, 1000, 1000)
    assert (tag.job_id, tag.nodes) == ("4242", 4)


def test_cgroup_v2_slurmstepd_path(tmp_path):
    fake_proc(tmp_path, 11, cgroup="0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n")
    assert Tagger(tmp_path, node_count=None).tag(11, 5, 5).job_id == "77"


def test_environment_job_and_sizes(tmp_path):
    fake_proc(tmp_path, 20, env={"SLURM_JOB_ID": "31", "SLURM_NNODES": "8", "HOME": "/x"})
    fake_proc(tmp_path, 21, env={"SLURM_JOB_ID": "32"})
    asked: list[str] = []

    def lookup(job: str) -> int:
        asked.append(job)
        return 3

    tagger = Tagger(tmp_path, node_count=lookup)
    assert tagger.tag(20, 1, 1).nodes == 8  # from SLURM_NNODES: the client is not asked
    assert tagger.tag(21, 1, 1).nodes == 3  # from the Slurm client ...
    fake_proc(tmp_path, 22, env={"SLURM_JOB_ID": "32"})
    assert tagger.tag(22, 1, 1).nodes == 3
    assert asked == ["32"]  # ... asked once per job (cached)


def test_failing_slurm_lookup_gives_one_node(tmp_path):
    fake_proc(tmp_path, 23, env={"SLURM_JOB_ID": "33"})

    def broken(job: str) -> int:
        raise RuntimeError("slurmctld down")

    assert Tagger(tmp_path, node_count=broken).tag(23, 1, 1).nodes == 1


def test_thread_maps_to_its_process(tmp_path):
    fake_proc(tmp_path, 30, env={"SLURM_JOB_ID": "5", "SLURM_NNODES": "2"})
    fake_proc(tmp_path, 31, tgid=30)  # a thread: its own dir has no useful environ
    (tmp_path / "31" / "environ").write_bytes(b"")
    tag = Tagger(tmp_path, node_count=None).tag(31, 7, 7)
    assert (tag.job_id, tag.nodes) == ("5", 2)


def test_outside_any_job_is_a_per_user_pseudo_job(tmp_path):
    fake_proc(tmp_path, 40)
    tag = Tagger(tmp_path, node_count=None).tag(40, 0, 0)
    assert tag == pseudo_tag(0, 0)
    assert tag.job_id == "user-0" and tag.user == "root" and not in_job(tag)
    assert Tagger(tmp_path).tag(4040, 12345, 12345).job_id == "user-12345"  # no such process


def test_pid_reuse_is_not_mis_tagged(tmp_path):
    fake_proc(tmp_path, 50, start=100, env={"SLURM_JOB_ID": "1"})
    tagger = Tagger(tmp_path, node_count=None)
    assert tagger.tag(50, 1, 1).job_id == "1"
    fake_proc(tmp_path, 50, start=200, env={"SLURM_JOB_ID": "2"})  # same pid, new process
    assert tagger.tag(50, 1, 1).job_id == "2"
    assert tagger.cached(50, 1, 1) is not None


def test_environ_read_times_out(tmp_path):
    fake_proc(tmp_path, 60)
    environ = tmp_path / "60" / "environ"
    environ.unlink()
    os.mkfifo(environ)  # a read blocks forever, like a process whose mm lock is held
    tagger = Tagger(tmp_path, node_count=None, environ_timeout=0.2)
    started = time.monotonic()
    tag = tagger.tag(60, 3, 3)
    assert tag.job_id == "user-3"
    assert time.monotonic() - started < 5
    with open(environ, "wb"):  # unblock the abandoned reader thread
        pass


def test_real_processes_with_different_slurm_environments():
    tagger = Tagger(node_count=None)
    procs = []
    for job, nodes in (("101", "1"), ("102", "4")):
        env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": job, "SLURM_JOB_NUM_NODES": nodes}
        procs.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                                      env=env))
    plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             env={"PATH": "/usr/bin:/bin"})
    try:
        time.sleep(0.3)
        tags = [tagger.tag(p.pid, 0, 0) for p in procs]
        assert [(t.job_id, t.nodes) for t in tags] == [("101", 1), ("102", 4)]
        assert tagger.tag(plain.pid, 0, 0).job_id == "user-0"
    finally:
        for p in [*procs, plain]:
            p.kill()
            p.wait()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_real_thread_id_resolves_to_process():
    import threading

    tids: list[int] = []
    ready = threading.Event()
    stop = threading.Event()

    def worker() -> None:
        tids.append(threading.get_native_id())
        ready.set()
        stop.wait(10)

    t = threading.Thread(target=worker)
    t.start()
    ready.wait(5)
    try:
        tagger = Tagger(node_count=None)
        assert tids[0] != os.getpid()
        assert tagger.process_of(tids[0]) == os.getpid()
    finally:
        stop.set()
        t.join()
