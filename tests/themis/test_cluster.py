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

from tests.themis.fusehelp import free_port, fuse_available, start_themis
from themis.cluster.control import Controller
from themis.cluster.link import ClusterLink
from themis.cluster.records import RecordError, Report, decode, encode
from themis.cluster.store import StoreError
from themis.config import ClusterConfig, ConfigError, parse
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
    with pytest.raises(ConfigError, match=r"t.toml: cluster.url: expected redis://"):
        parse({"cluster": {"url": "http://h"}}, "t.toml")
    with pytest.raises(ConfigError, match="cluster.timeout_seconds"):
        parse({"cluster": {"window_seconds": 0.2, "timeout_seconds": 0.5}}, "t.toml")


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
    def __init__(self, where: Path) -> None:
        self.where = where
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

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
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while (
            subprocess.run(
                ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True
            ).stdout.strip()
            != "PONG"
        ):
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture
def redis_proc(tmp_path: Path) -> Iterator[RedisProc]:
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server (apt-get install redis-server)")
    pytest.importorskip("redis")
    r = RedisProc(tmp_path)
    yield r
    r.kill()


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
