"""hpcbase.httpserve over real sockets: idle clients are dropped after the timeout, and no
more than ``max_clients`` connections are served (so hold a thread) at once."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request

from prometheus_client import CollectorRegistry, Counter

from hpcbase.httpserve import BoundedHTTPServer, metrics_handler, serve_in_thread, serve_metrics


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def test_idle_connections_hold_no_thread_for_long_and_scrapes_go_on() -> None:
    registry = CollectorRegistry()
    Counter("demo_events", "events", registry=registry).inc(3)
    server = BoundedHTTPServer(("127.0.0.1", 0), metrics_handler(registry, timeout=1.0), 4)
    stop = serve_in_thread(server, "test-http")
    port = server.server_address[1]
    base = threading.active_count()
    try:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
        time.sleep(0.5)
        assert threading.active_count() <= base + 4  # 50 idle clients, at most 4 threads
        for s in idle[4:]:  # beyond the bound: closed at once, not queued
            s.settimeout(2)
            assert s.recv(10) == b""
        time.sleep(1.5)  # the 4 served ones time out
        assert threading.active_count() <= base + 1
        assert "demo_events_total 3.0" in scrape(port)
        for s in idle:
            s.close()
    finally:
        stop()


def test_serve_metrics_answers_metrics_and_404_elsewhere() -> None:
    registry = CollectorRegistry()
    Counter("demo_events", "events", registry=registry).inc()
    server, stop = serve_metrics(registry, 0)
    port = server.server_address[1]
    try:
        assert "demo_events_total 1.0" in scrape(port)
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=5)
            raise AssertionError("expected a 404")
        except urllib.error.HTTPError as e:
            assert e.code == 404
    finally:
        stop()
