"""The trio Gate: fair turns, in-flight limit, cancellation, timed wake-ups (on trio's clock)."""

from __future__ import annotations

import pytest

pytest.importorskip("trio", reason="the trio gate needs the fuse extra")
import trio  # noqa: E402
import trio.testing  # noqa: E402

from themis.sched import JobTag, Scheduler  # noqa: E402
from themis.sched.aio import Gate  # noqa: E402

A = JobTag("a", "u1", "g", 1)
B = JobTag("b", "u2", "g", 4)


def test_gate_orders_by_policy_and_limits_inflight():
    gate = Gate(Scheduler("size-fair", "sfq", max_inflight=2))
    order: list[str] = []
    running = [0, 0]  # now, max

    async def worker(tag: JobTag, n: int) -> None:
        for _ in range(n):
            async with gate.slot(tag, 4096):
                running[0] += 1
                running[1] = max(running[1], running[0])
                order.append(tag.job_id)
                await trio.sleep(0.001)
                running[0] -= 1

    async def main() -> None:
        async with trio.open_nursery() as n:
            for _ in range(4):  # 4 concurrent "processes" per job
                n.start_soon(worker, A, 10)
                n.start_soon(worker, B, 10)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert running[1] == 2
    assert len(order) == 80
    assert order[:25].count("b") >= 18  # size-fair 1:4 while both are backlogged
    assert gate.scheduler.queued == 0 and gate.scheduler.inflight == 0


def test_gate_cancellation_withdraws_and_releases():
    gate = Gate(Scheduler("job-fair", "lottery", max_inflight=1))
    done: list[str] = []

    async def holder() -> None:
        async with gate.slot(A, 10):
            await trio.sleep(1)
            done.append("a")

    async def waiter() -> None:
        async with gate.slot(B, 3 << 20):  # 3 chunks, never admitted: cancelled while waiting
            done.append("b")

    async def main() -> None:
        async with trio.open_nursery() as n:
            n.start_soon(holder)
            await trio.sleep(0.1)
            with trio.move_on_after(0.2):
                await waiter()
        async with gate.slot(A, 10):  # the gate still works afterwards
            done.append("again")

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert done == ["a", "again"]
    assert gate.scheduler.queued == 0 and gate.scheduler.inflight == 0


def test_gate_wakes_up_for_a_token_bucket():
    async def main() -> float:
        sched = Scheduler(
            "job-fair",
            "tbf",
            rate=1000.0,
            burst=100.0,
            clock=trio.current_time,
            max_inflight=4,
            min_charge=0,
        )
        gate = Gate(sched)
        start = trio.current_time()
        for _ in range(11):
            async with gate.slot(A, 100):
                pass
        return trio.current_time() - start

    elapsed = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert 0.99 <= elapsed <= 1.05  # 100 B burst, then 1000 B/s for 1000 B


def test_gate_large_request_waits_for_every_chunk_turn():
    gate = Gate(Scheduler("job-fair", "sfq", max_inflight=1, chunk_bytes=1000))
    order: list[str] = []

    async def big() -> None:
        async with gate.slot(A, 3000) as req:  # 3 chunks: charged 3000 bytes
            assert len(req.chunks) == 3
            order.append("big")

    async def small() -> None:
        for _ in range(3):
            async with gate.slot(B, 1000):
                order.append("small")
                await trio.sleep(0.01)

    async def main() -> None:
        async with trio.open_nursery() as n:
            n.start_soon(small)
            await trio.sleep(0.001)
            n.start_soon(big)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert order.index("big") >= 2  # it had to wait for its chunks' turns
    assert gate.scheduler.queued == 0 and gate.scheduler.inflight == 0
