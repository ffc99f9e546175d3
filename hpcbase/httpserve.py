"""The daemons' small HTTP servers, bounded against hostile clients.

Every user of a node can reach a daemon's endpoint, even one on loopback. A plain
``ThreadingHTTPServer`` (and prometheus_client's ``start_http_server``) gives each connection
a thread that lives for as long as the client keeps the connection open. So a user who opens
thousands of idle connections piles up threads in the daemon until it can start no more of
its own. Here each connection may stay silent for at most ``timeout`` seconds, and at most
``max_clients`` are served at once; further connections are closed straight away.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

IO_TIMEOUT = 10.0
"""Seconds a client may take to send its request or read the answer."""
MAX_CLIENTS = 32
"""Connections served at once; more are closed as they arrive."""


class BoundedHTTPServer(ThreadingHTTPServer):
    """A ``ThreadingHTTPServer`` with at most ``max_clients`` connection threads."""

    daemon_threads = True
    request_queue_size = 64  # listen backlog: a burst of connections is accepted, then judged

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self._slots = threading.BoundedSemaphore(max_clients)
        if ":" in address[0]:  # an IPv6 address such as "::1"
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: close it rather than queue a thread
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def metrics_handler(
    registry: CollectorRegistry, timeout: float = IO_TIMEOUT
) -> type[BaseHTTPRequestHandler]:
    """A handler that answers ``GET /metrics`` (and ``/``) with ``registry``'s samples."""

    seconds = timeout  # in the class body, `timeout = timeout` would not see the argument

    class MetricsHandler(BaseHTTPRequestHandler):
        timeout = seconds  # socket timeout of each connection (StreamRequestHandler)

        def log_message(self, fmt: str, *args: Any) -> None:  # scrapes are not news
            pass

        def do_GET(self) -> None:
            if self.path.split("?")[0] not in ("/", "/metrics"):
                self.send_error(404)
                return
            body = generate_latest(registry)
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return MetricsHandler


def serve_in_thread(server: BoundedHTTPServer, name: str) -> Callable[[], None]:
    """Run ``server`` in a daemon thread; returns the function that stops it."""
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return stop


def serve_metrics(
    registry: CollectorRegistry, port: int, address: str = "127.0.0.1"
) -> tuple[BoundedHTTPServer, Callable[[], None]]:
    """Serve ``registry`` on ``address:port`` (0: any free port); the server and its stop."""
    server = BoundedHTTPServer((address, port), metrics_handler(registry))
    return server, serve_in_thread(server, "metrics-http")
