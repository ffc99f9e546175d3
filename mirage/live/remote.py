"""The watcher's side of agentd's decision endpoint (``POST /v1/decide``)."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from dataclasses import asdict

from mirage.live.decisions import DecisionResult, PolicyError
from mirage.observation import ChainState


class AgentdUnavailable(RuntimeError):
    """agentd did not answer; the watcher waits and asks again (nothing is submitted)."""


class RemoteDecider:
    """Asks agentd (``url`` like ``http://127.0.0.1:9465``) for each decision."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def decide(self, spec: str, chain: ChainState, step: int) -> DecisionResult:
        body = json.dumps({"policy": spec, "chain": asdict(chain), "step": step}).encode()
        req = urllib.request.Request(
            self.url + "/v1/decide", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                data = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("error", detail)
            if e.code == 400:
                raise PolicyError(f"agentd {self.url}: {detail}") from None
            raise AgentdUnavailable(f"agentd {self.url}: HTTP {e.code}: {detail}") from None
        except (OSError, ValueError) as e:
            raise AgentdUnavailable(f"agentd {self.url}: {e}") from None
        return DecisionResult(
            data["action"], data["policy"], float(data["time"]), dict(data.get("inputs", {}))
        )
