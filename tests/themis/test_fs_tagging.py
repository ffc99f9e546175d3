"""Tagging on a real mount: processes with different SLURM_* environments and uids (with
``tagging.trust_environment``, as a site without Slurm on the node would set it), and a job run
through the local real Slurm cluster, show up per job in the Prometheus metrics. The attacks on
the tagger (claimed sizes and other users' jobs) are in test_security.py."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from hpcbase.asuser import run_as
from tests.themis.fusehelp import start_themis
from themis.tagging import SlurmJobs

pytestmark = pytest.mark.fuse

TRUST = "[tagging]\ntrust_environment = true\n"

WRITE_CODE = (
    "import os\nwith open(os.environ['OUT'], 'wb') as f:\n"
    "    f.write(b'x' * int(os.environ['NBYTES']))\n"
)


@pytest.fixture
def trusting(fuse_root):
    """A mount that believes SLURM_* variables (no Slurm knows these made-up jobs)."""
    config = fuse_root / "trust.toml"
    config.write_text(TRUST)
    mount = start_themis(fuse_root, config=config)
    yield mount
    mount.stop()


def test_jobs_users_and_sizes_are_tagged(trusting):
    themis = trusting
    shared = themis.mnt / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    runs = [  # uid, environment, bytes
        (1001, {"SLURM_JOB_ID": "501", "SLURM_JOB_NUM_NODES": "1"}, 10_000),
        (1001, {"SLURM_JOB_ID": "502", "SLURM_NNODES": "4"}, 20_000),
        (1002, {"SLURM_JOB_ID": "503", "SLURM_JOB_NUM_NODES": "2"}, 30_000),
        (1002, {}, 40_000),  # outside any job: the user's pseudo job
    ]
    for i, (uid, env, nbytes) in enumerate(runs):
        full = {"PATH": "/usr/bin:/bin", "OUT": str(shared / f"f{i}"), "NBYTES": str(nbytes), **env}
        out = run_as(uid, WRITE_CODE, env=full)
        assert out.returncode == 0, out.stderr
    for uid, env, nbytes in runs:
        job = env.get("SLURM_JOB_ID", f"user-{uid}")
        assert (
            themis.sample("themis_io_bytes_total", slurm_job=job, user=str(uid), op="write")
            == nbytes
        )
        assert themis.sample("themis_io_operations_total", slurm_job=job, op="write") == 1.0
        nodes = env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or "1"
        assert themis.sample("themis_job_nodes", slurm_job=job) == float(nodes)
    assert os.stat(themis.backing / "shared" / "f2").st_uid == 1002


def test_tag_is_kept_with_the_open_file(trusting):
    """A file opened in one job and written by a child with another environment stays tagged
    with the opener's job (reads and writes carry no caller)."""
    code = (
        "import os, subprocess, sys\n"
        "fd = os.open(os.environ['OUT'], os.O_CREAT | os.O_WRONLY, 0o644)\n"
        "env = dict(os.environ, SLURM_JOB_ID='902')\n"
        "child = f'import os; os.write({fd}, bytes(777))'\n"
        "subprocess.run([sys.executable, '-c', child], pass_fds=[fd], env=env, check=True)\n"
    )
    themis = trusting
    env = {"PATH": "/usr/bin:/bin", "OUT": str(themis.mnt / "inherit"), "SLURM_JOB_ID": "901"}
    out = run_as(0, code, env=env)
    assert out.returncode == 0, out.stderr
    assert themis.sample("themis_io_bytes_total", slurm_job="901", op="write") == 777.0
    assert themis.sample("themis_io_bytes_total", slurm_job="902", op="write") is None


def sbatch(cluster, *args: str) -> str:
    out = subprocess.run(
        ["sbatch", "--parsable", "-o", "/dev/null", *args],
        env=dict(os.environ, **cluster.env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().split(";")[0]


@pytest.mark.slurm
def test_slurm_job_shows_up_in_metrics(themis, slurm_cluster):
    out = themis.mnt / "from-slurm"
    job_id = sbatch(
        slurm_cluster, "-N", "1", "--wrap", f"python3 -c \"open('{out}', 'wb').write(b's' * 4096)\""
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if themis.sample("themis_io_bytes_total", slurm_job=job_id, op="write") == 4096.0:
            break
        time.sleep(0.25)
    assert Path(themis.backing / "from-slurm").stat().st_size == 4096
    assert themis.sample("themis_io_bytes_total", slurm_job=job_id, op="write") == 4096.0
    assert themis.sample("themis_job_open_files", slurm_job=job_id) == 0.0


@pytest.mark.slurm
def test_node_count_from_the_slurm_client(slurm_cluster):
    job_id = sbatch(slurm_cluster, "-N", "1", "--wrap", "sleep 20")
    try:
        lookup = SlurmJobs(str(slurm_cluster.conf_path), ttl=0)
        deadline = time.monotonic() + 30
        info = lookup(job_id)
        while (info is None or not info.running) and time.monotonic() < deadline:
            time.sleep(0.5)
            info = lookup(job_id)
        assert info is not None and info.nodes == 1 and info.uid == os.getuid()
        assert info.node_list  # the allocated node, checked against this node's name
        assert lookup("999999") is None  # a job Slurm never knew
    finally:
        subprocess.run(["scancel", job_id], env=dict(os.environ, **slurm_cluster.env), check=False)


def test_finished_jobs_expire_from_the_metrics(fuse_root):
    config = fuse_root / "themis.toml"
    config.write_text(TRUST + "[metrics]\njob_ttl_seconds = 1\nupdate_seconds = 0.1\n")
    mount = start_themis(fuse_root, config=config)
    try:
        env = {
            "PATH": "/usr/bin:/bin",
            "OUT": str(mount.mnt / "short"),
            "NBYTES": "100",
            "SLURM_JOB_ID": "777",
        }
        out = run_as(0, WRITE_CODE, env=env)
        assert out.returncode == 0, out.stderr
        assert mount.sample("themis_io_bytes_total", slurm_job="777", op="write") == 100.0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and mount.sample("themis_jobs_expired_total") != 1.0:
            time.sleep(0.1)
        assert mount.sample("themis_jobs_expired_total") == 1.0
        assert mount.sample("themis_io_bytes_total", slurm_job="777", op="write") is None
        assert 'slurm_job="777"' not in mount.scrape()
    finally:
        mount.stop()
