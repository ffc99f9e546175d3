"""scripts/slurm-cluster.sh on its own: a second small cluster next to the session one."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from hpcbase.netutil import free_port
from hpcbase.slurm import SlurmError, get_client
from hpcbase.slurm.localcluster import SCRIPT, LocalCluster, missing_programs

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(
        bool(missing_programs()), reason="Slurm/munge not installed (scripts/setup.sh)"
    ),
]


def script(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "MIRAGE_SLURMCTLD_PORT": str(cluster.ctld_port),
        "MIRAGE_SLURMD_PORT": str(cluster.slurmd_port),
        "MIRAGE_SLURMD_PORTS": ",".join(map(str, cluster.slurmd_ports)),
    }
    return subprocess.run(
        ["bash", str(SCRIPT), *args, "--dir", str(cluster.dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def small_dir():
    with tempfile.TemporaryDirectory(prefix="mslurm-", dir="/tmp") as d:
        yield Path(d)


def test_lifecycle_conf_extra_and_idempotence(small_dir: Path) -> None:
    extra = small_dir / "extra.conf"
    extra.write_text("SchedulerParameters=bf_interval=2,bf_window=60\nPriorityWeightAge=1000\n")
    cluster = LocalCluster(small_dir / "c", cpus=3, conf_extra=extra)
    rendered = cluster.render_conf()
    assert not (small_dir / "c").exists()  # render starts nothing
    try:
        cluster.start()
        conf = cluster.conf_path.read_text()
        assert conf == rendered
        for line in (
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "PriorityType=priority/multifactor",
            "JobCompType=jobcomp/filetxt",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            f"SlurmctldPort={cluster.ctld_port}",
            "PriorityWeightAge=1000",
        ):
            assert line in conf.splitlines()
        lines = conf.splitlines()
        if "ProctrackType=proctrack/cgroup" in lines:  # hosts with cgroup v1 (MIRAGE_SLURM_CGROUPS)
            assert "TaskPlugin=task/cgroup" in lines
            assert "CgroupPlugin=cgroup/v1" in (cluster.dir / "cgroup.conf").read_text()
        else:
            assert {"ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none"} <= set(lines)
        assert re.search(
            r"^PartitionName=debug .*Default=YES MaxTime=INFINITE State=UP", conf, re.M
        )
        again = script(cluster, "start", "--cpus", "3", "--conf-extra", str(extra))
        assert again.returncode == 0 and "already running" in again.stdout
        other = script(cluster, "start", "--cpus", "5")
        assert other.returncode == 1 and "different configuration" in other.stderr
        status = script(cluster, "status")
        assert status.returncode == 0 and "slurmctld: running" in status.stdout
        env = script(cluster, "env")
        assert f"export SLURM_CONF={cluster.conf_path}" in env.stdout
        # Slurm itself took the appended settings and the declared size.
        client = get_client("cli", conf=cluster.conf_path, min_interval=0)
        part = client.partition()
        assert part.total_cpus == 3 and part.total_nodes == 1
        shown = client.runner.run(["scontrol", "show", "config"])
        assert re.search(r"SchedulerParameters\s*=\s*bf_interval=2,bf_window=60", shown)
        assert re.search(r"PriorityWeightAge\s*=\s*1000", shown)
        jid = client.submit("sleep 30", {"n": 3, "t": "1:00", "o": "/dev/null"})
        assert client.job(jid) is not None
    finally:
        cluster.stop()
    stopped = script(cluster, "status")
    assert stopped.returncode == 3 and "slurmctld: stopped" in stopped.stdout
    again = script(cluster, "stop")
    assert again.returncode == 0 and "not running" in again.stdout
    # stop cancelled the job, and the jobcomp log recorded it
    assert "JobState=CANCELLED" in cluster.jobcomp_path.read_text()


def test_several_nodes_on_one_machine(small_dir: Path) -> None:
    """``--nodes 3``: three slurmd on this machine, each its own node and port; a job spans
    them, one task on each."""
    one = [
        ln for ln in LocalCluster(small_dir / "one").render_conf().splitlines() if "NodeName=" in ln
    ]
    assert len(one) == 1 and " Port=" not in one[0]  # one node: as before --nodes
    cluster = LocalCluster(small_dir / "c", cpus=2, nodes=3)
    out = small_dir / "tasks.txt"
    try:
        cluster.start()
        nodes = re.findall(
            r"^NodeName=(\S+) .* Port=(\d+) CPUs=2 ", cluster.conf_path.read_text(), re.M
        )
        assert [int(p) for _, p in nodes] == cluster.slurmd_ports and len(nodes) == 3
        client = get_client("cli", conf=cluster.conf_path, min_interval=0)
        part = client.partition()
        assert part.total_nodes == 3 and part.total_cpus == 6
        client.submit(
            f"srun -l printenv SLURMD_NODENAME > {out}",
            {"N": 3, "n": 3, "t": "1:00", "o": "/dev/null"},
        )
        deadline = time.monotonic() + 60
        while not (out.exists() and len(out.read_text().splitlines()) == 3):
            assert time.monotonic() < deadline, "the three-node job did not run"
            time.sleep(0.5)
        ran = {line.split(": ", 1)[1] for line in out.read_text().splitlines()}
        assert ran == {name for name, _ in nodes}
        status = script(cluster, "status")  # the nodes from its slurm.conf
        assert status.returncode == 0
        assert [f"slurmd ({name}): running" in status.stdout for name, _ in nodes] == [True] * 3
    finally:
        cluster.stop()
    assert script(cluster, "status").returncode == 3  # every slurmd stopped


def test_port_taken_is_reported(small_dir: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        cluster = LocalCluster(small_dir / "c", cpus=2, ports=(taken, free_port()))
        proc = script(cluster, "start", "--cpus", "2")
    assert proc.returncode == 1
    assert f"port {taken} (for slurmctld) is already in use" in proc.stderr
    assert script(cluster, "status").returncode == 3  # nothing was left running


def test_daemon_failure_shows_its_log(small_dir: Path) -> None:
    bad = small_dir / "bad.conf"
    bad.write_text("SelectType=select/does_not_exist\n")
    cluster = LocalCluster(small_dir / "c", cpus=2, conf_extra=bad)
    try:
        proc = script(cluster, "start", "--cpus", "2", "--conf-extra", str(bad))
        assert proc.returncode == 1
        assert "slurmctld" in proc.stderr and "last lines of" in proc.stderr
        assert "does_not_exist" in proc.stderr
    finally:
        cluster.stop()


def test_bad_arguments() -> None:
    proc = subprocess.run(
        ["bash", str(SCRIPT), "start", "--cpus", "lots"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1 and "--cpus must be a positive integer" in proc.stderr
    proc = subprocess.run(
        ["bash", str(SCRIPT), "start", "--nodes", "0"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1 and "--nodes must be an integer from 1 to 99" in proc.stderr
    proc = subprocess.run(
        ["bash", str(SCRIPT), "start", "--conf-extra", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1 and "no such file: /nonexistent" in proc.stderr
    proc = subprocess.run(
        ["bash", str(SCRIPT), "frobnicate"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2 and "unknown command" in proc.stderr


@pytest.mark.skipif(
    bool(missing_programs(accounting=True)), reason="slurmdbd/MariaDB not installed (setup.sh)"
)
def test_accounting_database_keeps_users_and_limits_over_a_restart(small_dir: Path) -> None:
    cluster = LocalCluster(small_dir / "c", cpus=2, accounting=True)
    plain = LocalCluster(small_dir / "p", cpus=2)
    with pytest.raises(SlurmError, match="no accounting database"):
        plain.sacctmgr("list", "qos")
    assert "AccountingStorageType=accounting_storage/none" in plain.render_conf()
    try:
        cluster.start()
        conf = cluster.conf_path.read_text()
        assert "AccountingStorageEnforce=associations,limits,qos" in conf
        assert f"AccountingStoragePort={cluster.dbd_port}" in conf
        # the database password is the cluster owner's alone, and MariaDB is on loopback
        for secret in ("slurmdbd.conf", "db.pass"):
            assert (cluster.dir / secret).stat().st_mode & 0o077 == 0
        with socket.create_connection(("127.0.0.1", cluster.db_port), timeout=5):
            pass
        status = script(cluster, "status")
        assert status.returncode == 0 and "slurmdbd: running" in status.stdout
        cluster.add_users(["daemon"])
        cluster.add_users(["daemon"])  # again: nothing to add
        cluster.sacctmgr("modify", "qos", "normal", "set", "MaxJobsPerUser=1")
        # a restart keeps the database: users and limits are still there
        cluster.stop()
        assert script(cluster, "status").returncode == 3
        cluster.start()
        users = cluster.sacctmgr("-n", "-P", "list", "user", "format=user").split()
        assert "daemon" in users
        qos = cluster.sacctmgr("-n", "-P", "show", "qos", "normal", "format=maxjobsperuser")
        assert qos.strip() == "1"
        # a dead slurmdbd: sacctmgr's error comes back whole
        cluster.stop("slurmdbd")
        with pytest.raises(SlurmError, match="sacctmgr list qos failed"):
            cluster.sacctmgr("list", "qos")
    finally:
        cluster.stop()
