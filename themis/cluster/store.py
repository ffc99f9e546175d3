"""The Redis side of cluster mode: publish this node's report, read every live node's.

Blocking (redis-py); the daemon calls it from a worker thread with a deadline.  Keys:
``PREFIX:node:NAME`` holds a node's latest report and expires after the TTL; the sorted set
``PREFIX:nodes`` names the nodes by the time of their last report, so a reader needs no SCAN.
Two round trips per window.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Protocol

LOCAL_URL = "local:"


class StoreError(RuntimeError):
    """Redis could not be reached or answered in time."""


class Store(Protocol):
    """Where the nodes' reports meet: Redis, or this node alone."""

    url: str

    def exchange(self, node: str, payload: bytes) -> list[bytes]: ...

    def close(self) -> None: ...


class LocalStore:
    """A cluster of one node (``cluster.url = "local:"``): no Redis; this node's report is
    the only one. The controller then caps each job at its share of what this node measured,
    so the policy holds where nothing queues at the scheduler: when the CPU, not the device,
    is the bottleneck, a job over its share waits for its cap and its processes leave the
    CPU to the others. Probing (every cap binding) keeps it work-conserving."""

    url = LOCAL_URL

    def exchange(self, node: str, payload: bytes) -> list[bytes]:
        return [payload]

    def close(self) -> None:
        pass


class RedisStore:
    """One node's connection to the cluster's Redis database (``redis://HOST:PORT/N``)."""

    def __init__(
        self,
        url: str,
        prefix: str,
        ttl: float,
        timeout: float,
        username: str = "",
        password: str | None = None,
    ) -> None:
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError as exc:  # the optional "cluster" extra
            raise StoreError(f"cluster mode needs redis-py (pip install redis): {exc}") from None
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._auth_errors: tuple[type[BaseException], ...] = (
            redis.AuthenticationError,
            redis.exceptions.NoPermissionError,
        )
        self.url = url
        self.prefix = prefix
        self.ttl = ttl
        self.client: Any = redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            username=username or None,
            password=password,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )

    def _key(self, node: str) -> str:
        return f"{self.prefix}:node:{node}"

    def exchange(self, node: str, payload: bytes) -> list[bytes]:
        """Publish ``payload`` as ``node``'s report; returns every live node's report (ours
        included).  Raises :class:`StoreError`."""
        members = f"{self.prefix}:nodes"
        now = time.time()
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.set(self._key(node), payload, px=max(1, int(self.ttl * 1000)))
            pipe.zadd(members, {node: now})
            pipe.zremrangebyscore(members, "-inf", now - self.ttl)
            pipe.zrange(members, 0, -1)
            nodes = pipe.execute()[-1]
            if not nodes:
                return []
            values = self.client.mget([self._key(n.decode()) for n in nodes])
        except self._auth_errors as exc:
            raise StoreError(
                f"{type(exc).__name__}: {exc} (check cluster.username and cluster.password_file)"
            ) from None
        except self._errors as exc:
            raise StoreError(f"{type(exc).__name__}: {exc}") from None
        return [v for v in values if v is not None]

    def close(self) -> None:
        with contextlib.suppress(*self._errors):
            self.client.close()
