"""The I/O path without FUSE: chunking through the scheduler's gate, the emulated device, and
the errno translation of handlers."""

from __future__ import annotations

import errno
import os

import pytest

pyfuse3 = pytest.importorskip("pyfuse3", reason="the FUSE I/O path needs the fuse extra")
pytest.importorskip("trio", reason="the FUSE I/O path needs the fuse extra")
import trio  # noqa: E402
import trio.testing  # noqa: E402

from themis.fs.device import EmulatedDevice  # noqa: E402
from themis.fs.errors import fuse_errors  # noqa: E402
from themis.fs.io import ScheduledIO  # noqa: E402
from themis.metrics import ThemisMetrics  # noqa: E402
from themis.sched import JobTag, Scheduler  # noqa: E402
from themis.sched.aio import Gate  # noqa: E402

TAG = JobTag("42", "alice", "phys", 2)


def make_io(chunk: int = 4096, bandwidth: float = 0.0, threads: int = 0) -> ScheduledIO:
    gate = Gate(Scheduler("size-fair", "lottery", max_inflight=2, chunk_bytes=chunk))
    return ScheduledIO(gate, EmulatedDevice(bandwidth), ThemisMetrics(), io_threads=threads)


@pytest.mark.parametrize("threads", [0, 2])
def test_large_requests_are_split_into_chunks(tmp_path, threads):
    io = make_io(threads=threads)
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    data = os.urandom(10_000)

    async def main() -> tuple[int, bytes, bytes]:
        n = await io.write(TAG, fd, 100, data)
        whole = await io.read(TAG, fd, 100, 10_000)
        tail = await io.read(TAG, fd, 9_000, 8192)  # crosses the end of the file
        return n, whole, tail

    n, whole, tail = trio.run(main)
    os.close(fd)
    assert n == 10_000 and whole == data and tail == data[8_900:]
    stats = io.gate.scheduler.stats()
    assert stats.ops_served == 3 + 3 + 1  # 3 write chunks, 3 read chunks, 1 read chunk at EOF
    assert stats.inflight == 0 and stats.queued_chunks == 0
    reg = io.metrics.registry
    labels = {"slurm_job": "42", "user": "alice", "group": "phys"}
    assert reg.get_sample_value("themis_io_bytes_total", {**labels, "op": "write"}) == 10_000
    assert reg.get_sample_value("themis_io_bytes_total", {**labels, "op": "read"}) == 10_000 + 1_100


def test_backing_errors_propagate_and_free_the_slot(tmp_path):
    io = make_io()
    fd = os.open(tmp_path / "ro", os.O_RDONLY | os.O_CREAT)

    async def main() -> None:
        with pytest.raises(OSError) as info:
            await io.write(TAG, fd, 0, b"x" * 9000)
        assert info.value.errno == errno.EBADF

    trio.run(main)
    os.close(fd)
    assert io.gate.scheduler.inflight == 0 and io.gate.scheduler.queued == 0


def test_emulated_device_serialises_transfers():
    device = EmulatedDevice(1000.0)  # bytes/s
    done: list[float] = []

    async def transfer(n: int) -> None:
        await device.occupy(n)
        done.append(trio.current_time())

    async def main() -> None:
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            for n in (500, 250, 250):
                nursery.start_soon(transfer, n)
        done[:] = [t - start for t in done]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    ends = sorted(done)  # one device, one transfer at a time: 1000 bytes take 1 s in all
    assert ends[-1] == pytest.approx(1.0)
    gaps = sorted(round(b - a, 6) for a, b in zip([0.0, *ends], ends))
    assert gaps == [0.25, 0.25, 0.5]


def test_handlers_only_raise_fuse_errors():
    @fuse_errors
    async def denied() -> None:
        raise PermissionError(errno.EACCES, "no")

    @fuse_errors
    async def full() -> None:
        raise OSError(errno.ENOSPC, "full")

    @fuse_errors
    async def bug() -> None:
        raise KeyError("oops")

    for handler, want in ((denied, errno.EACCES), (full, errno.ENOSPC), (bug, errno.EIO)):
        with pytest.raises(pyfuse3.FUSEError) as info:
            trio.run(handler)
        assert info.value.errno == want
