"""Loopback ports for the services the suite starts (local Slurm, Redis, metrics, HTTP)."""

from __future__ import annotations

import socket


def free_ports(n: int = 1, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct TCP ports on ``host`` that nobody listens on now (the kernel's choice).

    All ``n`` sockets are held open together, so the ports differ; another process may still
    take one before the caller binds it, as with any such choice."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port(host: str = "127.0.0.1") -> int:
    """One TCP port on ``host`` that nobody listens on now."""
    return free_ports(1, host)[0]
