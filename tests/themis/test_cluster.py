"""Cluster mode: reports, the controller, the link's local-only fallback, and a real run of
two daemons over one shared emulated device with Redis killed and restarted mid-run."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from prometheus_client import CollectorRegistry

from hpcbase.netutil import free_port
from tests.themis.fusehelp import fuse_available, start_themis
from themis.cluster.control import Controller
from themis.cluster.link import ClusterLink
from themis.cluster.records import RecordError, Report, decode, encode
from themis.cluster.store import LocalStore, RedisStore, StoreError
from themis.config import ClusterConfig, ConfigError, ThemisConfig, parse, read_password_file
from themis.sched import JobTag, Policy, Scheduler
from themis.sched.allocation import NodeUsage
from themis.sched.ratecap import RateCapDispatcher
from themis.sched.registry import make_dispatcher

T1 = JobTag("1", "alice", "g", 1)
T2 = JobTag("2", "bob", "g", 2)


def usage(tag: JobTag, node: str, mb: float, busy: bool = True) -> NodeUsage:
    return NodeUsage(tag, node, int(mb * 1e6 * 0.5), 10, 1 << 20 if busy else 0, 0.5, busy)


def test_report_round_trip_and_errors() -> None:
    rep = Report("B", 1.5e9, 0.5, (usage(T2, "B", 40),), {"2": 123.0})
    raw = encode(rep)
    assert len(raw) < 200
    back = decode(raw)
    assert back.usage == rep.usage and back.caps == {"2": 123.0} and back.node == "B"
    with pytest.raises(RecordError, match="version"):
        decode(b'{"v": 9}')
    with pytest.raises(RecordError, match="undecodable"):
        decode(b"{not json")
    with pytest.raises(RecordError):
        decode(b'{"v":1,"n":"A","t":1,"s":0.5,"j":[["1","u","g",0,1,1,0,1,0]]}')  # nodes 0
    # values no daemon writes (a damaged or forged record) are refused, not allocated on
    for bad in ("1,-5,1,0,1,0", "1,5,1,0,1,NaN", "1,5,1,0,1,-1"):  # nodes, bytes, ..., cap
        with pytest.raises(RecordError, match="job 1"):
            decode(f'{{"v":1,"n":"A","t":1,"s":0.5,"j":[["1","u","g",{bad}]]}}')
    with pytest.raises(RecordError, match="time"):
        decode(b'{"v":1,"n":"A","t":Infinity,"s":0.5,"j":[]}')


def test_controller_caps_each_node_at_its_share_of_the_global_allocation() -> None:
    # uncoordinated: node A gives job 1 half the store, B and C a quarter each to job 2
    reports = [
        Report("A", 0, 0.5, (usage(T1, "A", 50),), {}),
        Report("B", 0, 0.5, (usage(T2, "B", 25),), {}),
        Report("C", 0, 0.5, (usage(T2, "C", 25),), {}),
    ]
    policy = Policy.from_name("size-fair")
    caps = {n: Controller(n, headroom=1.1).update(policy, reports) for n in "ABC"}
    measured = 100e6
    assert caps["A"].measured == pytest.approx(measured)
    assert caps["A"].target == pytest.approx({"1": 1 / 3, "2": 2 / 3})
    # job 1 got 1/2 for a target of 1/3: its correction is below 1, job 2's above
    a, b, c = caps["A"].caps["1"], caps["B"].caps["2"], caps["C"].caps["2"]
    assert a < measured * 1.1 / 3
    assert b == pytest.approx(c) and b > measured * 1.1 / 3
    assert set(caps["A"].caps) == {"1"}  # a node caps only its own jobs


def test_controller_caps_nobody_while_one_job_alone_moves_data() -> None:
    policy = Policy.from_name("size-fair")
    alone = [Report("A", 0, 0.5, (usage(T1, "A", 50), usage(T2, "A", 0, busy=False)), {})]
    assert Controller("A").update(policy, alone).caps == {}
    both = [Report("A", 0, 0.5, (usage(T1, "A", 50), usage(T2, "A", 50)), {})]
    caps = Controller("A").update(policy, both).caps
    assert caps["2"] >= 2 * caps["1"]  # 2 nodes against 1 (and job 1 is over its share)


def test_controller_shares_out_the_recent_peak_not_one_slow_window() -> None:
    policy = Policy.from_name("job-fair")
    ctl = Controller("A", headroom=1.1, peak_half_life=5.0)

    def window(mb: float) -> float:
        rep = [Report("A", 0, 0.5, (usage(T1, "A", mb / 2), usage(T2, "A", mb / 2)), {})]
        return ctl.update(policy, rep, learn=False).capacity

    assert window(100) == pytest.approx(110e6)  # headroom over the measured rate
    # a slow window (the caps' own doing, or noise) does not shrink what is shared out...
    assert window(50) == pytest.approx(100e6 * 0.5 ** (0.5 / 5.0))
    # ...but the peak fades: 20 s of slow windows later, the measured rate rules again
    for _ in range(40):
        cap = window(50)
    assert cap == pytest.approx(55e6)


def test_local_store_is_a_cluster_of_this_node_alone() -> None:
    """``cluster.url = "local:"``: no Redis; the node's own report is the only one, and a
    job that moves data counts as wanting more (nothing queues when the CPU is the limit)."""
    link = ClusterLink(ClusterConfig(url="local:", node="n1"))
    assert isinstance(link.store, LocalStore) and link.local
    assert link.store.exchange("n1", b"report") == [b"report"]
    sched = Scheduler("size-fair", link.wrap(make_dispatcher("lottery")), max_inflight=4)
    link.attach(sched, CollectorRegistry())

    def serve() -> None:
        for tag in (T1, T2):  # served and done: nothing queued at the sample
            for _ in range(3):
                sched.submit(tag, 1 << 20)
                sched.done(sched.next())

    serve()
    report = link.sample()
    assert {u.tag.job_id for u in report.usage if u.backlogged} == {"1", "2"}

    async def window() -> None:
        assert await link.exchange_once()

    serve()
    trio.run(window)
    assert set(link.caps) == {"1", "2"} and link.caps["2"] > link.caps["1"]


def test_controller_probes_when_every_cap_binds_and_frees_idle_share() -> None:
    reports = [
        Report("A", 0, 0.5, (usage(T1, "A", 30),), {"1": 30e6}),
        Report("B", 0, 0.5, (usage(T2, "B", 30),), {"2": 30e6}),
    ]
    d = Controller("A", headroom=1.1, probe=1.5).update(Policy.from_name("job-fair"), reports)
    assert d.probing and d.capacity == pytest.approx(90e6)
    # job 2 not backlogged: it keeps what it used, job 1 gets the rest of the capacity
    reports = [
        Report("A", 0, 0.5, (usage(T1, "A", 30),), {"1": 40e6}),  # below its cap
        Report("B", 0, 0.5, (usage(T2, "B", 10, busy=False),), {}),
    ]
    d = Controller("A", headroom=1.1).update(Policy.from_name("job-fair"), reports)
    assert not d.probing
    assert d.caps["1"] == pytest.approx(40e6 * 1.1 - 10e6)


class FlakyStore:
    """A store that fails while ``down``."""

    def __init__(self) -> None:
        self.down = False
        self.seen: list[bytes] = []

    def exchange(self, node: str, payload: bytes) -> list[bytes]:
        if self.down:
            raise StoreError("ConnectionError: refused")
        self.seen.append(payload)
        other = encode(Report("B", 0, 0.5, (usage(T2, "B", 90),), {}))
        return [payload, other]

    def close(self) -> None:
        pass


def test_link_goes_local_only_and_rejoins(caplog: pytest.LogCaptureFixture) -> None:
    store = FlakyStore()
    link = ClusterLink(ClusterConfig(url="redis://x", node="A"), store=store)  # type: ignore[arg-type]
    disp = link.wrap(make_dispatcher("lottery"))
    assert isinstance(disp, RateCapDispatcher)
    sched = Scheduler("job-fair", disp, max_inflight=1)
    registry = CollectorRegistry()
    link.attach(sched, registry)
    sched.submit(T1, 1 << 20)
    sched.done(sched.take()[0])
    sched.submit(T1, 1 << 20)

    async def go() -> list[bool]:
        out = [await link.exchange_once()]
        store.down = True
        out.append(await link.exchange_once())
        store.down = False
        out.append(await link.exchange_once())
        return out

    assert trio.run(go) == [True, False, True]
    assert link.connected is True and "1" in disp.rates
    assert registry.get_sample_value("themis_cluster_connected") == 1
    assert registry.get_sample_value("themis_cluster_exchanges_total", {"outcome": "error"}) == 1
    text = caplog.text
    assert "local-only scheduling" in text and text.count("joined through") == 2
    assert b'"n":"A"' in store.seen[0]


def test_cluster_config_errors_name_the_field() -> None:
    cfg = parse(
        {"cluster": {"url": "redis://h:1/0", "window_seconds": 0.1, "timeout_seconds": 0.1}},
        "t.toml",
    )
    assert cfg.cluster.window_seconds == 0.1
    assert parse({"cluster": {"url": "local:"}}, "t.toml").cluster.url == "local:"
    with pytest.raises(ConfigError, match=r"t.toml: cluster.url: expected redis://"):
        parse({"cluster": {"url": "http://h"}}, "t.toml")
    with pytest.raises(ConfigError, match="cluster.timeout_seconds"):
        parse({"cluster": {"window_seconds": 0.2, "timeout_seconds": 0.5}}, "t.toml")
    with pytest.raises(ConfigError, match=r"cluster.url: holds credentials.*password_file"):
        parse({"cluster": {"url": "redis://:secret@h:1/0"}}, "t.toml")


def test_password_file_must_be_private(tmp_path: Path) -> None:
    """Whoever can read the Redis password can publish forged usage for any job, so the file
    must be the daemon's (or root's) alone; each rule it breaks is named."""
    secret = tmp_path / "redis.secret"
    secret.write_text("s3cret\nignored\n")

    def check(path: Path) -> ThemisConfig:
        return parse({"cluster": {"url": "redis://h:1/0", "password_file": str(path)}}, "t.toml")

    secret.chmod(0o644)
    with pytest.raises(ConfigError, match=r"t.toml: cluster.password_file: .*mode 0644.*chmod 600"):
        check(secret)
    secret.chmod(0o600)
    assert check(secret).cluster.password_file == str(secret)
    assert read_password_file(str(secret)) == "s3cret"
    link = tmp_path / "link"
    link.symlink_to(secret)
    with pytest.raises(ConfigError, match="symbolic link"):
        check(link)
    with pytest.raises(ConfigError, match="No such file"):
        check(tmp_path / "missing")
    with pytest.raises(ConfigError, match="not a regular file"):
        check(tmp_path)
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "empty").chmod(0o600)
    with pytest.raises(ConfigError, match="empty"):
        check(tmp_path / "empty")
    if os.geteuid() == 0:  # a file another user owns (and could rewrite) is refused
        os.chown(secret, 1001, 1001)
        with pytest.raises(ConfigError, match="owned by uid 1001"):
            check(secret)


# -- a real run -------------------------------------------------------------------------------
WORKER = r"""
import os, sys, time
path, start_at, stop_at = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
buf = b"w" * 262144
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
while time.time() < start_at:
    time.sleep(0.002)
off, out = 0, []
while time.time() < stop_at:
    os.pwrite(fd, buf, off)
    out.append(time.time())
    off = (off + 262144) % (8 << 20)
print(",".join(f"{t:.3f}" for t in out))
"""


class RedisProc:
    def __init__(self, where: Path, password: str = "") -> None:
        self.where = where
        self.port = free_port()
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def cli(self, *args: str) -> str:
        """``redis-cli`` with the server's password (from the environment, not argv)."""
        env = dict(os.environ, REDISCLI_AUTH=self.password) if self.password else None
        cmd = ["redis-cli", "-p", str(self.port), *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=env).stdout.strip()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.where),
                *(["--requirepass", self.password] if self.password else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while self.cli("ping") != "PONG":
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def needs_redis() -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server (apt-get install redis-server)")
    pytest.importorskip("redis")


@pytest.fixture
def redis_proc(tmp_path: Path) -> Iterator[RedisProc]:
    needs_redis()
    r = RedisProc(tmp_path)
    yield r
    r.kill()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[tuple[RedisProc, Path]]:
    """A real Redis that wants a password, and the daemon's owner-only password file."""
    needs_redis()
    secret = tmp_path / "redis.secret"
    secret.write_text("not-for-users-7f3a\n")
    secret.chmod(0o600)
    r = RedisProc(tmp_path, password="not-for-users-7f3a")
    yield r, secret
    r.kill()


@pytest.mark.redis
def test_a_password_protected_redis_takes_reports_only_from_the_daemons(
    private_redis: tuple[RedisProc, Path],
) -> None:
    """With ``cluster.password_file`` the daemons authenticate; anyone without the password
    (a user on a compute node) can neither read the reports nor forge one."""
    redis_proc, secret = private_redis
    url = f"redis://127.0.0.1:{redis_proc.port}/0"
    report = encode(Report("A", time.time(), 0.5, (usage(T1, "A", 10),), {}))
    store = RedisStore(url, "themis", 1.5, 0.25, password=read_password_file(str(secret)))
    assert store.exchange("A", report) == [report]
    store.close()
    for password in (None, "guess"):
        outsider = RedisStore(url, "themis", 1.5, 0.25, password=password)
        with pytest.raises(StoreError, match="Authentication.*cluster.password_file"):
            outsider.exchange("evil", report.replace(b'"A"', b'"evil"'))
        outsider.close()
    forged = subprocess.run(  # a plain client, as any user could run one
        ["redis-cli", "-p", str(redis_proc.port), "set", "themis:node:evil", "{}"],
        capture_output=True,
        text=True,
    )
    assert "NOAUTH" in forged.stdout + forged.stderr
    assert redis_proc.cli("keys", "themis:node:*") == "themis:node:A"


@pytest.mark.fuse
@pytest.mark.redis
def test_daemon_joins_a_private_redis_with_its_password_file(
    private_redis: tuple[RedisProc, Path], tmp_path: Path
) -> None:
    """A real daemon reads ``cluster.password_file`` and joins; with the file missing from
    its config it cannot, says why, and serves I/O local-only."""
    why = fuse_available()
    if why:
        pytest.skip(f"real FUSE mount {why}")
    redis_proc, secret = private_redis
    url = f"redis://127.0.0.1:{redis_proc.port}/0"
    for name, extra in (("with", f'password_file = "{secret}"\n'), ("without", "")):
        root = tmp_path / name
        root.mkdir()
        config = root / "themis.toml"
        config.write_text(f'[cluster]\nurl = "{url}"\nnode = "{name}"\n{extra}')
        mount = start_themis(root, "--log-level", "info", config=config)
        try:
            (mount.mnt / "f").write_bytes(b"x" * 4096)  # I/O is served either way
            deadline = time.monotonic() + 10
            while "cluster:" not in mount.logs() and time.monotonic() < deadline:
                time.sleep(0.1)
            logs = mount.logs()
        finally:
            mount.stop()
        assert "compiled data path: " in logs and "compiled data path off" not in logs, logs
        if name == "with":
            assert "joined through" in logs, logs
            assert redis_proc.cli("exists", "themis:node:with") in ("0", "1")  # it published
        else:
            assert "local-only" in logs and "cluster.password_file" in logs, logs


@pytest.mark.fuse
@pytest.mark.redis
@pytest.mark.slow
def test_redis_killed_and_restarted_io_goes_on_and_shares_return(redis_proc: RedisProc) -> None:
    why = fuse_available()
    if why:
        pytest.skip(f"real FUSE mount {why}")
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"themis-cluster-{os.getpid()}"
    root.mkdir()
    backing = root / "backing"
    backing.mkdir()
    config = root / "themis.toml"
    window = 0.5
    config.write_text(
        '[scheduler]\npolicy = "job-fair"\nmax_inflight = 4\n'
        "[tagging]\ntrust_environment = true\n"  # made-up jobs: no Slurm to confirm them
        f"[cluster]\nwindow_seconds = {window}\n"
    )
    url = f"redis://127.0.0.1:{redis_proc.port}/0"
    mounts = []
    try:
        for node in ("A", "B"):
            (root / node).mkdir()
            mounts.append(
                start_themis(
                    root / node,
                    "--cluster",
                    url,
                    "--cluster-node",
                    node,
                    "--device-bandwidth",
                    "60e6",
                    "--device-shared",
                    str(root / "device.state"),
                    backing=backing,
                    config=config,
                )
            )
        # job 1 alone on A; jobs 2 and 3 on B: job-fair wants 1/3 each, B alone gives 1/2 : 1/4
        t0 = time.time() + 1.5
        kill_at, back_at, end = t0 + 5, t0 + 8, t0 + 15.0
        procs = []
        for job, mount in (("1", mounts[0]), ("2", mounts[1]), ("3", mounts[1])):
            env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": job, "SLURM_NNODES": "1"}
            for w in range(4):
                procs.append(
                    (
                        job,
                        subprocess.Popen(
                            [
                                "/usr/bin/python3",
                                "-c",
                                WORKER,
                                str(mount.mnt / f"{job}-{w}"),
                                repr(t0),
                                repr(end),
                            ],
                            env=env,
                            stdout=subprocess.PIPE,
                            text=True,
                        ),
                    )
                )
        time.sleep(max(0.0, kill_at - time.time()))
        redis_proc.kill()
        time.sleep(max(0.0, back_at - time.time()))
        redis_proc.start()
        back = time.time()
        stamps: dict[str, list[float]] = {"1": [], "2": [], "3": []}
        for job, p in procs:
            out, _ = p.communicate(timeout=60)
            assert p.returncode == 0
            stamps[job] += [float(x) for x in out.strip().split(",") if x]
        logs = [m.logs() for m in mounts]
    finally:
        for m in mounts:
            m.stop()
        shutil.rmtree(root, ignore_errors=True)

    # I/O never stopped, for any job, also while Redis was gone (3 s): no pause as long as
    # the outage. Shorter pauses are the 2-core machine's scheduling under a full test run
    # (1.26 s seen once), not Redis: the exchange runs in its own thread.
    for job, ts in stamps.items():
        ts.sort()
        gaps = [b - a for a, b in zip([t0, *ts], [*ts, end])]
        assert max(gaps) < 2.0, f"job {job} stalled for {max(gaps):.2f} s"

    def shares(lo: float, hi: float) -> dict[str, float]:
        n = {j: sum(lo <= t < hi for t in ts) for j, ts in stamps.items()}
        total = sum(n.values())
        return {j: c / total for j, c in n.items()}

    before = shares(t0 + 3, kill_at)
    gone = shares(kill_at + 1.5, back_at)
    # 5 s of stamps after the return: a 2.5-s window missed 10 % once on a loaded machine
    after = shares(back + 3 * window, back + 3 * window + 5.0)
    for j in "123":
        assert after[j] == pytest.approx(1 / 3, rel=0.10), (after, before, gone)
    # Before the kill only shows that coordination is on: node A's lone job 1 is below the
    # local-only share it gets while Redis is gone (the same 0.42 boundary). Its window
    # starts 3 s after the jobs, and convergence on a loaded 2-core machine can take part of
    # it (0.388 seen once in a full run, against 1/3 coordinated and 0.5 local-only).
    assert before["1"] < 0.42 and min(before.values()) > 0.25, (after, before, gone)
    assert gone["1"] > 0.42, gone  # local-only meanwhile: node A's share went to job 1
    for log in logs:
        assert "is slow or gone" in log and log.count("cluster: joined through") == 2
    assert not math.isnan(before["1"])
    print(f"shares before {before}, Redis gone {gone}, from 3 windows after its return {after}")


@pytest.mark.redis
def test_redis_script_starts_a_password_protected_server(tmp_path: Path) -> None:
    """``scripts/redis-server.sh --password-file`` (used by bench/themis_cluster.py): the
    server wants the password, which stays off every command line, and stop still works."""
    needs_redis()
    secret = tmp_path / "redis.secret"
    secret.write_text('with \\ and " inside\n')
    secret.chmod(0o600)
    port = str(free_port())
    script = [str(Path(__file__).resolve().parents[2] / "scripts/redis-server.sh")]
    opts = ["--dir", str(tmp_path / "r"), "--port", port, "--password-file", str(secret)]

    def run(*cmd: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cmd], capture_output=True, text=True, env=env, timeout=30)

    assert run(*script, "start", *opts).returncode == 0
    try:
        assert "NOAUTH" in run("redis-cli", "-p", port, "set", "themis:node:x", "{}").stdout
        auth = dict(os.environ, REDISCLI_AUTH='with \\ and " inside')
        assert run("redis-cli", "-p", port, "set", "k", "v", env=auth).stdout == "OK\n"
        assert (tmp_path / "r" / "redis.conf").stat().st_mode & 0o077 == 0
    finally:
        assert run(*script, "stop", *opts).returncode == 0
    assert run(*script, "status", "--port", port).returncode == 3


@pytest.mark.fuse
@pytest.mark.slow
def test_local_rates_share_a_cpu_bound_mount_by_policy(tmp_path: Path) -> None:
    """``cluster.url = "local:"`` on a real mount over bare tmpfs (no device emulation, so
    nothing queues at the scheduler): size-fair caps a 1-node and a 4-node job so that the
    4-node one moves clearly more (about 4x in bench/themis_fairness.py --local-rates)."""
    why = fuse_available()
    if why:
        pytest.skip(f"real FUSE mount {why}")
    config = tmp_path / "themis.toml"
    config.write_text(
        '[tagging]\ntrust_environment = true\n[scheduler]\npolicy = "size-fair"\n'
        '[cluster]\nurl = "local:"\nwindow_seconds = 0.1\ntimeout_seconds = 0.05\n'
    )
    mount = start_themis(tmp_path, config=config)
    try:
        t0 = time.time() + 1.0
        end = t0 + 4.0
        procs = []
        for job, nodes in (("1", "1"), ("2", "4")):
            env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": job, "SLURM_NNODES": nodes}
            for w in range(4):
                cmd = ["/usr/bin/python3", "-c", WORKER, str(mount.mnt / f"{job}-{w}")]
                procs.append(
                    (
                        job,
                        subprocess.Popen(
                            [*cmd, repr(t0), repr(end)], env=env, stdout=subprocess.PIPE, text=True
                        ),
                    )
                )
        time.sleep(max(0.0, end - 0.3 - time.time()))
        caps = {
            j: mount.sample("themis_cluster_job_cap_bytes_per_second", slurm_job=j) for j in "12"
        }
        writes = dict.fromkeys("12", 0)
        for job, proc in procs:
            out, _ = proc.communicate(timeout=60)
            # the second half of the run: the caps have settled
            writes[job] += sum(float(t) > t0 + 2.0 for t in out.split(",") if t)
        assert mount.sample("themis_cluster_connected") == 1
    finally:
        assert mount.stop() == 0
    assert caps["1"] and caps["2"] and caps["2"] > caps["1"], caps
    assert writes["2"] > 2 * writes["1"], writes
