"""Tagging a requesting pid with its Slurm job: a fake /proc for the logic, real processes too."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpcbase.slurm import JobInfo
from hpcbase.slurm.parse import hostlist_contains
from themis.tagging import Tagger, in_job, pseudo_tag


def fake_proc(
    root: Path,
    pid: int,
    *,
    tgid: int | None = None,
    start: int = 1000,
    cgroup: str = "0::/user.slice\n",
    env: dict[str, str] | None = None,
) -> None:
    d = root / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    (d / "status").write_text(f"Name:\tx\nTgid:\t{tgid or pid}\nPid:\t{pid}\n")
    fields = ["S"] + ["0"] * 18 + [str(start)] + ["0"] * 10
    (d / "stat").write_text(f"{pid} (a b) c) " + " ".join(fields) + "\n")
    (d / "cgroup").write_text(cgroup)
    raw = b"".join(f"{k}={v}".encode() + b"\0" for k, v in (env or {}).items())
    (d / "environ").write_bytes(raw)


def job(
    jid: int,
    uid: int = 1,
    nodes: int = 2,
    state: str = "RUNNING",
    node_list: str | None = "n[01-02]",
    user: str = "u",
) -> JobInfo:
    return JobInfo(
        id=jid,
        name="j",
        user=user,
        state=state,
        nodes=nodes,
        cpus=1,
        time_limit=None,
        submit=None,
        eligible=None,
        start=None,
        end=None,
        uid=uid,
        node_list=node_list,
    )


class FakeSlurm:
    """Slurm's answers by job id, counting the questions."""

    def __init__(self, *jobs: JobInfo) -> None:
        self.jobs = {str(j.id): j for j in jobs}
        self.asked: list[str] = []

    def __call__(self, job_id: str) -> JobInfo | None:
        self.asked.append(job_id)
        return self.jobs.get(job_id)


def test_cgroup_job_wins_over_environment_and_size_comes_from_slurm(tmp_path):
    fake_proc(
        tmp_path,
        10,
        cgroup="12:memory:/slurm/uid_1000/job_4242/step_0\n",
        env={"SLURM_JOB_ID": "999", "SLURM_JOB_NUM_NODES": "64"},
    )
    slurm = FakeSlurm(job(4242, uid=1000, nodes=4))
    tag = Tagger(tmp_path, slurm=slurm, node_name="n01").tag(10, 1000, 1000)
    assert (tag.job_id, tag.nodes) == ("4242", 4)
    assert slurm.asked == ["4242"]  # the environment's 999 is not even looked at


def test_cgroup_v2_slurmstepd_path(tmp_path):
    fake_proc(
        tmp_path, 11, cgroup="0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n"
    )
    assert Tagger(tmp_path, slurm=None).tag(11, 5, 5).job_id == "77"
    fake_proc(tmp_path, 12, cgroup="0::/system.slice/n07_slurmstepd.scope/job_78/step_0\n")
    assert Tagger(tmp_path, slurm=None).tag(12, 5, 5).job_id == "78"


def test_a_job_cgroup_made_by_a_user_does_not_count(tmp_path):
    """A user may create cgroups in a delegated subtree (systemd --user): not Slurm's."""
    own = "0::/user.slice/user-5.slice/user@5.service/app.slice/job_4242\n"
    fake_proc(tmp_path, 13, cgroup=own)
    assert Tagger(tmp_path, slurm=FakeSlurm(job(4242, uid=5))).tag(13, 5, 5).job_id == "user-5"


def test_environment_job_must_be_confirmed_by_slurm(tmp_path):
    slurm = FakeSlurm(
        job(31, uid=1, nodes=3),
        job(32, uid=2),
        job(33, uid=1, state="PENDING"),
        job(34, uid=1, node_list="n[03-04]"),
        job(35, uid=None, user="root"),
    )
    tagger = Tagger(tmp_path, slurm=slurm, node_name="n02")
    cases = [  # (pid, claimed job, uid, expected job)
        (20, "31", 1, "31"),  # running, the caller's, on this node
        (21, "32", 1, "user-1"),  # another user's job
        (22, "33", 1, "user-1"),  # not running
        (23, "34", 1, "user-1"),  # runs elsewhere
        (24, "99", 1, "user-1"),  # unknown to Slurm
        (25, "35", 0, "35"),  # no uid in the answer: the user name must match (root)
        (26, "35", 1, "user-1"),
    ]
    for pid, claimed, uid, want in cases:
        fake_proc(tmp_path, pid, env={"SLURM_JOB_ID": claimed, "SLURM_NNODES": "64"})
        tag = tagger.tag(pid, uid, uid)
        assert tag.job_id == want, (pid, claimed)
        assert tag.nodes == (3 if want == "31" else 2 if want == "35" else 1)


def test_no_slurm_means_no_environment_job(tmp_path):
    fake_proc(tmp_path, 27, env={"SLURM_JOB_ID": "40", "SLURM_JOB_NUM_NODES": "8"})
    assert Tagger(tmp_path, slurm=None).tag(27, 3, 3).job_id == "user-3"


def test_trusted_environment_takes_the_job_but_slurm_sizes_win(tmp_path):
    slurm = FakeSlurm(job(41, uid=9, nodes=2))
    tagger = Tagger(tmp_path, slurm=slurm, trust_environment=True)
    fake_proc(tmp_path, 28, env={"SLURM_JOB_ID": "41", "SLURM_NNODES": "64"})
    fake_proc(tmp_path, 29, env={"SLURM_JOB_ID": "42", "SLURM_JOB_NUM_NODES": "8"})
    assert (tagger.tag(28, 1, 1).job_id, tagger.tag(28, 1, 1).nodes) == ("41", 2)
    assert (tagger.tag(29, 1, 1).job_id, tagger.tag(29, 1, 1).nodes) == ("42", 8)  # unknown
    fake_proc(tmp_path, 30, env={"SLURM_JOB_ID": "42"})
    assert tagger.tag(30, 1, 1).nodes == 8  # cached per job
    assert slurm.asked.count("42") == 1


def test_failing_slurm_lookup_gives_the_pseudo_job(tmp_path):
    fake_proc(tmp_path, 23, env={"SLURM_JOB_ID": "33"})

    def broken(job: str) -> JobInfo:
        raise RuntimeError("slurmctld down")

    assert Tagger(tmp_path, slurm=broken).tag(23, 1, 1).job_id == "user-1"


def test_hostlists():
    assert hostlist_contains("n[01-04,07],login1", "n03")
    assert hostlist_contains("n[01-04,07],login1", "login1")
    assert hostlist_contains("rack[1-2]-n[1-3]", "rack2-n3")
    assert not hostlist_contains("n[01-04]", "n5") and not hostlist_contains("n[01-04]", "n1")
    assert not hostlist_contains("n[01-04]", "n05")


def test_thread_maps_to_its_process(tmp_path):
    fake_proc(tmp_path, 30, env={"SLURM_JOB_ID": "5", "SLURM_NNODES": "64"})
    fake_proc(tmp_path, 31, tgid=30)  # a thread: its own dir has no useful environ
    (tmp_path / "31" / "environ").write_bytes(b"")
    tag = Tagger(tmp_path, slurm=FakeSlurm(job(5, uid=7)), node_name="n01").tag(31, 7, 7)
    assert (tag.job_id, tag.nodes) == ("5", 2)


def test_outside_any_job_is_a_per_user_pseudo_job(tmp_path):
    fake_proc(tmp_path, 40)
    tag = Tagger(tmp_path).tag(40, 0, 0)
    assert tag == pseudo_tag(0, 0)
    assert tag.job_id == "user-0" and tag.user == "root" and not in_job(tag)
    assert Tagger(tmp_path).tag(4040, 12345, 12345).job_id == "user-12345"  # no such process


def test_pid_reuse_is_not_mis_tagged(tmp_path):
    fake_proc(tmp_path, 50, start=100, env={"SLURM_JOB_ID": "1"})
    tagger = Tagger(tmp_path, trust_environment=True)
    assert tagger.tag(50, 1, 1).job_id == "1"
    fake_proc(tmp_path, 50, start=200, env={"SLURM_JOB_ID": "2"})  # same pid, new process
    assert tagger.tag(50, 1, 1).job_id == "2"
    assert tagger.cached(50, 1, 1) is not None


def test_environ_read_times_out(tmp_path):
    fake_proc(tmp_path, 60)
    environ = tmp_path / "60" / "environ"
    environ.unlink()
    os.mkfifo(environ)  # a read blocks forever, like a process whose mm lock is held
    tagger = Tagger(tmp_path, environ_timeout=0.2)
    started = time.monotonic()
    tag = tagger.tag(60, 3, 3)
    assert tag.job_id == "user-3"
    assert time.monotonic() - started < 5
    with open(environ, "wb"):  # unblock the abandoned reader thread
        pass


def test_real_processes_with_different_slurm_environments():
    tagger = Tagger(trust_environment=True)
    procs = []
    for job, nodes in (("101", "1"), ("102", "4")):
        env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": job, "SLURM_JOB_NUM_NODES": nodes}
        procs.append(
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
        )
    plain = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], env={"PATH": "/usr/bin:/bin"}
    )
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
        tagger = Tagger()
        assert tids[0] != os.getpid()
        assert tagger.process_of(tids[0]) == os.getpid()
    finally:
        stop.set()
        t.join()
