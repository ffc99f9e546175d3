"""Dispatchers by name."""

from __future__ import annotations

from typing import Any

from themis.sched.dispatch import Dispatcher, FifoDispatcher, LotteryDispatcher, SfqDispatcher

DISPATCHERS = ("lottery", "sfq", "fifo", "tbf", "gift")


def make_dispatcher(name: str, seed: int = 0, **options: Any) -> Dispatcher:
    """A new dispatcher: ``lottery`` (seeded), ``sfq``, ``fifo``, ``tbf`` (rate=, burst=, rates=)
    or ``gift`` (capacity=, burst=, coupon_cap=)."""
    from themis.sched.throttle import GiftDispatcher, TbfDispatcher

    if name == "lottery":
        return LotteryDispatcher(seed=seed)
    if name == "sfq":
        return SfqDispatcher()
    if name == "fifo":
        return FifoDispatcher()
    if name == "tbf":
        return TbfDispatcher(**options)
    if name == "gift":
        return GiftDispatcher(**options)
    raise ValueError(f"unknown dispatcher {name!r}; choose from {', '.join(DISPATCHERS)}")
