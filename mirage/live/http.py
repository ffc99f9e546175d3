"""agentd's HTTP endpoint: ``/metrics`` (Prometheus), ``/healthz`` and ``POST /v1/decide``.

``POST /v1/decide`` takes ``{"policy": NAME, "chain": {ChainState fields}, "step": N}`` and
answers ``{"action": "wait"|"submit"|"afterany", "policy", "time", "inputs"}``; a bad
request or a policy the daemon does not serve is a 400 with ``{"error": ...}``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from hpcbase.httpserve import IO_TIMEOUT, BoundedHTTPServer, serve_in_thread
from mirage.live.decisions import DecisionService, PolicyError
from mirage.metrics import Metrics
from mirage.observation import ChainState

log = logging.getLogger(__name__)
_MAX_BODY = 64 * 1024


def chain_state_from(data: Any) -> ChainState:
    """A ChainState from JSON, with a clear error for a missing or bad field."""
    if not isinstance(data, dict):
        raise ValueError("'chain' must be an object")
    values: dict[str, Any] = {}
    for name in ChainState.__dataclass_fields__:
        if name not in data:
            raise ValueError(f"chain.{name}: missing")
        try:
            values[name] = float(data[name])
        except (TypeError, ValueError):
            raise ValueError(f"chain.{name}: not a number: {data[name]!r}") from None
    values["pred_units"] = int(values["pred_units"])
    values["succ_units"] = int(values["succ_units"])
    return ChainState(**values)


class AgentdServer:
    """Serves one daemon's metrics, health and decisions in a background thread."""

    def __init__(
        self,
        listen: str,
        port: int,
        metrics: Metrics,
        service: Callable[[], DecisionService],
        health: Callable[[], tuple[bool, dict[str, Any]]],
    ) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            timeout = IO_TIMEOUT  # socket timeout of each connection (StreamRequestHandler)

            def log_message(self, fmt: str, *args: Any) -> None:
                log.debug("http: " + fmt, *args)

            def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, code: int, data: Any) -> None:
                self._send(code, json.dumps(data).encode())

            def do_GET(self) -> None:
                if self.path == "/metrics":
                    self._send(200, generate_latest(outer.metrics.registry), CONTENT_TYPE_LATEST)
                elif self.path in ("/healthz", "/health"):
                    ok, detail = outer.health()
                    self._json(200 if ok else 503, {"status": "ok" if ok else "degraded", **detail})
                else:
                    self._json(404, {"error": f"no such path {self.path}"})

            def do_POST(self) -> None:
                if self.path != "/v1/decide":
                    self._json(404, {"error": f"no such path {self.path}"})
                    return
                try:
                    length = int(self.headers.get("Content-Length", "0"))
                    if not 0 <= length <= _MAX_BODY:  # -1 would read until the client stops
                        raise ValueError(f"Content-Length must be 0..{_MAX_BODY}, got {length}")
                    req = json.loads(self.rfile.read(length) or b"{}")
                    if not isinstance(req, dict):
                        raise ValueError("the request must be a JSON object")
                    spec = req.get("policy")
                    if not isinstance(spec, str):
                        raise ValueError("policy: missing or not a string")
                    chain = chain_state_from(req.get("chain"))
                    step = int(req.get("step", 0))
                    result = outer.service().decide(spec, chain, step)
                except (ValueError, PolicyError) as e:
                    self._json(400, {"error": str(e)})
                    return
                outer.metrics.count_decision(
                    result.policy, result.action, bool(result.outside_support)
                )
                self._json(200, result.to_json())

        self.metrics = metrics
        self.service = service
        self.health = health
        self.httpd = BoundedHTTPServer((listen, port), Handler)  # idle clients cannot pile up
        self.port = self.httpd.server_address[1]
        self._stop: Callable[[], None] = self.httpd.server_close  # until start()

    def start(self) -> None:
        self._stop = serve_in_thread(self.httpd, "agentd-http")

    def stop(self) -> None:
        self._stop()
