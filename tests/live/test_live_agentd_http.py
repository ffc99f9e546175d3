"""agentd's HTTP endpoint over real HTTP (no Slurm needed): decisions for watchers through
:class:`RemoteDecider`, errors as 400s, metrics scraped, and SIGHUP-style reloads."""

from __future__ import annotations

import json
import os
import re
import socket
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from hpcbase.snapshot import QueueSnapshot
from mirage import config
from mirage.agentd import Agentd, unsafe_state
from mirage.chain.store import ChainStore
from mirage.live import http
from mirage.live.decisions import PolicyError
from mirage.live.remote import AgentdUnavailable, RemoteDecider
from mirage.observation import ChainState

CONF = """
[history]
state_dir = "{d}"
sample_interval = 5.0
window = 6
[decisions]
decision_interval = {di}
default_policy = "average"
policies = ["average", "reactive"]
[http]
port = 0
"""


@pytest.fixture
def daemon(tmp_path):
    path = tmp_path / "mirage.toml"
    path.write_text(CONF.format(d=tmp_path, di=5.0))
    d = Agentd(config.load(path), CollectorRegistry())
    # three queue samples in which jobs waited 100 s before starting
    for i, t in enumerate((1000.0, 1005.0, 1010.0)):
        pend = [(10 + i, 1, 600.0, 900.0, 900.0)]
        run = [(10 + k, 1, 600.0, 1000.0 + 5 * k) for k in range(i)]
        d.history.push(QueueSnapshot.from_rows(t, 16, pend, run), 3600.0)
    d.server.start()
    yield d, path
    d.server.stop()


def chain(remaining: float) -> ChainState:
    return ChainState(
        now=2000.0,
        pred_units=1,
        pred_limit=600.0,
        pred_submit=1000.0,
        pred_start=2000.0 - (600.0 - remaining),
        succ_units=1,
        succ_limit=600.0,
    )


def post(port: int, body: bytes) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/decide", data=body)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_remote_decisions_follow_the_history(daemon):
    d, _ = daemon
    remote = RemoteDecider(f"http://127.0.0.1:{d.server.port}")
    late = remote.decide("average", chain(remaining=50.0), step=3)
    early = remote.decide("average", chain(remaining=500.0), step=0)
    assert (late.action, early.action) == ("submit", "wait")
    assert late.inputs["recent_waits_n"] == 2 and late.inputs["recent_waits_mean_s"] > 50
    assert late.policy == "average" and "queue" in late.inputs
    with urllib.request.urlopen(f"http://127.0.0.1:{d.server.port}/metrics", timeout=5) as r:
        text = r.read().decode()
    assert 'mirage_decisions_total{action="submit",policy="average"} 1.0' in text
    assert 'mirage_decisions_total{action="wait",policy="average"} 1.0' in text


def test_bad_requests_are_400_with_the_reason(daemon):
    d, _ = daemon
    port = d.server.port
    with pytest.raises(PolicyError, match="not served here"):
        RemoteDecider(f"http://127.0.0.1:{port}").decide("/etc/passwd", chain(10.0), 0)
    code, body = post(port, b'{"policy": "average", "chain": {"now": 1}}')
    assert code == 400 and "chain.pred_units: missing" in body["error"]
    code, body = post(port, b"not json")
    assert code == 400
    with pytest.raises(AgentdUnavailable):
        RemoteDecider("http://127.0.0.1:9", timeout=2).decide("average", chain(10.0), 0)


def test_reload_keeps_the_old_config_when_the_new_one_is_bad(daemon):
    d, path = daemon
    path.write_text("[history]\nwindow = -1\n")
    assert not d.reload() and d.cfg.history.window == 6
    path.write_text(CONF.format(d=path.parent, di=10.0))
    assert d.reload() and d.service.decision_interval == 10.0
    assert d.history.samples == 3  # same window and interval: history kept
    r = d.metrics.registry
    assert r.get_sample_value("mirage_config_reloads_total", {"result": "error"}) == 1
    assert r.get_sample_value("mirage_config_reloads_total", {"result": "ok"}) == 1


def test_a_model_outside_its_training_support_waits_and_is_counted(tmp_path):
    """The shipped LS6 model was trained on 48-h segments: a 10-minute segment is outside
    its support, so it waits, says why in the decision, and the metric counts it."""
    path = tmp_path / "mirage.toml"
    conf = CONF.format(d=tmp_path, di=5.0).replace("window = 6", "window = 144")
    conf = conf.replace('"average", "reactive"', '"default", "reactive"')
    path.write_text(conf.replace('default_policy = "average"', 'default_policy = "default"'))
    d = Agentd(config.load(path), CollectorRegistry())
    for t in (1000.0, 1005.0, 1010.0):
        d.history.push(QueueSnapshot.from_rows(t, 16, [(10, 1, 600.0, 900.0, 900.0)], []), 3600.0)
    d.server.start()
    try:
        remote = RemoteDecider(f"http://127.0.0.1:{d.server.port}")
        res = remote.decide("default", chain(remaining=50.0), step=3)
        assert res.action == "wait"
        assert "context:pred_limit" in res.inputs["outside_support"]
        assert "outside_support" not in remote.decide("reactive", chain(50.0), 3).inputs
        with urllib.request.urlopen(f"http://127.0.0.1:{d.server.port}/metrics", timeout=5) as r:
            text = r.read().decode()
    finally:
        d.server.stop()
    assert re.search(r'mirage_decisions_outside_support_total\{policy="[^"]+"\} 1\.0', text)


def raw_request(port: int, data: bytes, wait: float) -> tuple[bytes, float]:
    """Send ``data`` on a plain socket; what came back and after how many seconds (b"" when
    the server closed the connection without an answer)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(wait)
        t0 = time.monotonic()
        s.sendall(data)
        try:
            return s.recv(200), time.monotonic() - t0
        except TimeoutError:
            return b"(no answer)", time.monotonic() - t0


def test_hostile_clients_cannot_hold_the_daemons_threads(tmp_path, monkeypatch):
    """Users reach agentd: a negative Content-Length (which would read until the client
    stops, into memory) is a 400 at once, and a silent connection is closed after
    ``IO_TIMEOUT``, so idle clients cannot pile up threads."""
    monkeypatch.setattr(http, "IO_TIMEOUT", 1.0)
    path = tmp_path / "mirage.toml"
    path.write_text(CONF.format(d=tmp_path, di=5.0))
    d = Agentd(config.load(path), CollectorRegistry())
    d.server.start()
    try:
        port = d.server.port
        head = b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"
        answer, _ = raw_request(port, head + b"x" * 100_000, wait=5)
        assert answer.startswith(b"HTTP/1.0 400"), answer
        answer, took = raw_request(port, b"", wait=10)  # connects, then says nothing
        assert answer == b"" and took < 5, (answer, took)
        answer, took = raw_request(port, b"POST /v1/decide HTTP/1.1\r\n", wait=10)  # stalls
        assert answer in (b"", b"HTTP/1.0 408") or answer.startswith(b"HTTP/1.0 4"), answer
        assert took < 5
        code, body = post(port, b'{"policy": "average", "chain": {"now": 1}}')  # still serves
        assert code == 400 and "missing" in body["error"]
    finally:
        d.server.stop()


def test_chains_are_driven_only_from_state_the_daemon_alone_may_write(tmp_path, caplog):
    """The daemon submits a driven chain's jobs as its own user: a state directory or
    chains.db that others may write (or that is a link, or another user's) is refused, with
    the reason logged, until it is fixed."""
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    ChainStore(state).close()
    path = tmp_path / "mirage.toml"
    path.write_text(CONF.format(d=tmp_path, di=5.0) + f'[chains]\nstate_dirs = ["{state}"]\n')
    d = Agentd(config.load(path), CollectorRegistry())
    assert unsafe_state(state) is None and d._store(str(state)) is not None
    d._release_dir(str(state))
    state.chmod(0o777)
    assert d._store(str(state)) is None
    assert "mode 0777: group or others may write it" in caplog.text
    state.chmod(0o755)
    (state / "chains.db").chmod(0o664)
    assert "group or others" in (unsafe_state(state / "chains.db") or "")
    assert d._store(str(state)) is None
    (state / "chains.db").chmod(0o644)
    assert d._store(str(state)) is not None  # fixed: driven again
    link = tmp_path / "link"
    link.symlink_to(state)
    assert "symbolic link" in (unsafe_state(link) or "")
    if os.geteuid() == 0:
        os.chown(state, 1001, 1001)
        assert "owned by uid 1001" in (unsafe_state(state) or "")
