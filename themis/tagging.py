"""Resolve the process behind a FUSE request to its Slurm job, user, group and job size.

A request carries only a pid (possibly a thread id). We map it to its process (Tgid), then look
for the job in the process's cgroup (``job_<id>``), then in ``SLURM_JOB_ID`` from its
environment. A process outside any job gets a per-user pseudo job. Results are cached by
``(pid, start time)`` so a reused pid cannot inherit an old tag. The /proc root is injectable
for unit tests, and the Slurm lookup of a job's node count is an injectable callable.
"""

from __future__ import annotations

import contextlib
import grp
import logging
import os
import pwd
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

from themis.sched.tags import JobTag

log = logging.getLogger(__name__)

JOB_IN_CGROUP = re.compile(r"/job_(\d+)(?:/|$)")
SIZE_VARS = ("SLURM_JOB_NUM_NODES", "SLURM_NNODES")

NodeCountLookup = Callable[[str], "int | None"]


PSEUDO_PREFIX = "user-"


def user_name(uid: int) -> str:
    """The account name of ``uid`` (the key of per-user policy weights), else the number."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def pseudo_tag(uid: int, gid: int) -> JobTag:
    """The tag of a process outside any Slurm job: one pseudo job per user."""
    return JobTag(job_id=f"{PSEUDO_PREFIX}{uid}", user=user_name(uid), group=group_name(gid))


def in_job(tag: JobTag) -> bool:
    """True when the tag names a real Slurm job (not a per-user pseudo job)."""
    return not tag.job_id.startswith(PSEUDO_PREFIX)


V = TypeVar("V")


class _Cache(Generic[V]):
    """A small LRU cache of Slurm job sizes and process tags (thread-safe)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class SlurmNodeCount:
    """Ask the project's Slurm client (``mirage.slurm``) for a job's node count.

    The client is made on first use; any failure (no Slurm, job unknown) gives None.
    """

    def __init__(self, conf: str | None = None) -> None:
        self.conf = conf
        self._client: object | None = None
        self._lock = threading.Lock()

    def __call__(self, job_id: str) -> int | None:
        try:
            from hpcbase.slurm import get_client

            with self._lock:
                if self._client is None:
                    self._client = get_client("cli", conf=self.conf) if self.conf else get_client()
                client = self._client
            info = client.job(int(job_id))  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - Slurm trouble must not fail an open()
            log.warning("Slurm lookup of job %s failed: %s", job_id, exc)
            return None
        return int(info.nodes) if info is not None and info.nodes else None


class Tagger:
    """Tags requesting processes with their job; see the module docstring."""

    def __init__(
        self,
        proc_root: str | os.PathLike[str] = "/proc",
        node_count: NodeCountLookup | None = None,
        environ_timeout: float = 0.2,
        cache_size: int = 4096,
    ) -> None:
        self.proc = Path(proc_root)
        self.node_count = node_count  # None: SLURM_* variables only, else one node
        self.environ_timeout = environ_timeout
        self._tags: _Cache[JobTag] = _Cache(cache_size)
        self._sizes: _Cache[int] = _Cache(cache_size)

    # -- /proc readers -------------------------------------------------------------------
    def process_of(self, pid: int) -> int:
        """The process (thread-group leader) of a pid or thread id."""
        try:
            for line in (self.proc / str(pid) / "status").read_text().splitlines():
                if line.startswith("Tgid:"):
                    return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
        return pid

    def start_time(self, pid: int) -> int | None:
        """Field 22 of /proc/pid/stat (clock ticks since boot), None if the process is gone."""
        try:
            stat = (self.proc / str(pid) / "stat").read_text()
            return int(stat[stat.rindex(")") + 2 :].split()[19])
        except (OSError, ValueError, IndexError):
            return None

    def job_from_cgroup(self, pid: int) -> str | None:
        try:
            text = (self.proc / str(pid) / "cgroup").read_text()
        except OSError:
            return None
        for line in text.splitlines():
            match = JOB_IN_CGROUP.search(line.split(":", 2)[-1])
            if match:
                return match.group(1)
        return None

    def environ(self, pid: int) -> dict[str, str]:
        """The process's environment, or {} when unreadable or slower than the timeout.

        Reading another process's environment takes its memory-map lock, which can be held
        for long (e.g. by a page fault on this very file system), hence the timeout.
        """
        path = self.proc / str(pid) / "environ"
        result: list[bytes] = []

        def read() -> None:
            with contextlib.suppress(OSError):
                result.append(path.read_bytes())

        # one daemon thread per read: a reader stuck on a lock must not hold up later reads
        reader = threading.Thread(target=read, name=f"themis-environ-{pid}", daemon=True)
        reader.start()
        reader.join(self.environ_timeout)
        if reader.is_alive():
            log.warning("reading /proc/%d/environ timed out; tagging without it", pid)
            return {}
        if not result:
            return {}
        raw = result[0]
        env = {}
        for item in raw.split(b"\0"):
            key, sep, value = item.partition(b"=")
            if sep and key.startswith(b"SLURM_"):
                env[key.decode(errors="replace")] = value.decode(errors="replace")
        return env

    def job_size(self, job: str, env: dict[str, str]) -> int:
        for var in SIZE_VARS:
            value = env.get(var, "")
            if value.isdigit() and int(value) > 0:
                return int(value)
        cached = self._sizes.get(job)
        if cached is not None:
            return cached
        size = None
        if self.node_count is not None:
            try:
                size = self.node_count(job)
            except Exception as exc:  # noqa: BLE001 - an injected lookup must not kill the daemon
                log.warning("node-count lookup of job %s failed: %s", job, exc)
        size = size if size and size > 0 else 1
        self._sizes.put(job, size)
        return size

    # -- the entry points ----------------------------------------------------------------
    def _key(self, pid: int, uid: int, gid: int) -> tuple[int, int, int, int] | None:
        if pid <= 0:
            return None
        tgid = self.process_of(pid)
        started = self.start_time(tgid)
        return None if started is None else (tgid, started, uid, gid)

    def cached(self, pid: int, uid: int, gid: int) -> JobTag | None:
        """The tag without touching the environment: cached, pseudo, or None (resolve it)."""
        key = self._key(pid, uid, gid)
        if key is None:
            return pseudo_tag(uid, gid)
        return self._tags.get(key)

    def tag(self, pid: int, uid: int, gid: int) -> JobTag:
        """Tag the process behind a request from ``pid`` (a thread id is fine); may block."""
        key = self._key(pid, uid, gid)
        if key is None:
            return pseudo_tag(uid, gid)
        cached = self._tags.get(key)
        if cached is not None:
            return cached
        tgid = key[0]
        tag = self._resolve(tgid, uid, gid)
        self._tags.put(key, tag)
        return tag

    def _resolve(self, pid: int, uid: int, gid: int) -> JobTag:
        job = self.job_from_cgroup(pid)
        env = self.environ(pid)
        source = "cgroup"
        if job is None:
            job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
            source = "environ"
        if not job or not job.isdigit():
            return pseudo_tag(uid, gid)
        log.debug("pid %d: job %s (from %s)", pid, job, source)
        return JobTag(job_id=job, user=user_name(uid), group=group_name(gid),
                      nodes=self.job_size(job, env))
