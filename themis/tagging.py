"""Resolve the process behind a FUSE request to its Slurm job, user, group and job size.

Users control their environment, so nothing in it is believed unchecked. A request carries only
a pid (possibly a thread id); we map it to its process (Tgid), then

1. the job comes from the process's cgroup, where slurmstepd (root) put it: only Slurm's own
   hierarchies count (``/slurm[_NODE]/uid_U/job_J`` of cgroup v1, ``/system.slice/
   [NODE_]slurmstepd.scope/job_J`` of cgroup v2), not a ``job_J`` a user made in a delegated
   subtree of their own;
2. else a ``SLURM_JOB_ID`` in its environment counts only when Slurm confirms that the job is
   running, belongs to the caller's uid and runs on this node;
3. else the process gets its user's pseudo job.

The node count always comes from Slurm (through the project's Slurm client, cached), never from
the environment. A site may set ``tagging.trust_environment`` (logged as a warning): then the
job id is taken from the environment unchecked, and the node count from the environment only for
jobs Slurm does not know. Results are cached by ``(pid, start time, uid, gid)`` so a reused pid
cannot inherit an old tag. The /proc root and the Slurm lookup are injectable for unit tests.
"""

from __future__ import annotations

import contextlib
import grp
import logging
import os
import pwd
import re
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar, cast

from hpcbase.slurm import JobInfo
from hpcbase.slurm.parse import hostlist_contains
from themis.sched.tags import JobTag

log = logging.getLogger(__name__)

# Slurm's cgroup layouts (22.05): v1 /slurm[_NODE]/uid_U/job_J/..., v2
# /system.slice/[NODE_]slurmstepd.scope/job_J/... Both live where only root can write.
SLURM_CGROUPS = (
    re.compile(r"^/slurm(?:_[^/]+)?/uid_\d+/job_(\d+)(?:/|$)"),
    re.compile(r"^/system\.slice/(?:[^/]+_)?slurmstepd\.scope/job_(\d+)(?:/|$)"),
)
JOB_VARS = ("SLURM_JOB_ID", "SLURM_JOBID")
SIZE_VARS = ("SLURM_JOB_NUM_NODES", "SLURM_NNODES")

JobLookup = Callable[[str], "JobInfo | None"]


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


class SlurmJobs:
    """Ask the project's Slurm client (``hpcbase.slurm``) about a job, cached for ``ttl`` s.

    The client is made on first use; any failure (no Slurm, job unknown) gives None. Negative
    answers are cached too, so made-up job ids cost slurmctld one query per id and ``ttl``.
    """

    def __init__(self, conf: str | None = None, ttl: float = 30.0) -> None:
        self.conf = conf
        self.ttl = ttl
        self._client: object | None = None
        self._lock = threading.Lock()
        self._answers: _Cache[tuple[float, JobInfo | None]] = _Cache(4096)

    def __call__(self, job_id: str) -> JobInfo | None:
        hit = self._answers.get(job_id)
        if hit is not None and time.monotonic() - hit[0] < self.ttl:
            return hit[1]
        try:
            from hpcbase.slurm import get_client

            with self._lock:
                if self._client is None:
                    self._client = get_client("cli", conf=self.conf, min_interval=self.ttl)
                client = self._client
            info = client.job(int(job_id))  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - Slurm trouble must not fail an open()
            log.warning("Slurm lookup of job %s failed: %s", job_id, exc)
            info = None
        self._answers.put(job_id, (time.monotonic(), info))
        return cast("JobInfo | None", info)


def this_node() -> str:
    """This host's short name: Slurm's node name unless ``tagging.node_name`` says otherwise."""
    return socket.gethostname().split(".")[0]


class Tagger:
    """Tags requesting processes with their job; see the module docstring."""

    def __init__(
        self,
        proc_root: str | os.PathLike[str] = "/proc",
        slurm: JobLookup | None = None,
        node_name: str | None = None,
        trust_environment: bool = False,
        environ_timeout: float = 0.2,
        cache_size: int = 4096,
    ) -> None:
        self.proc = Path(proc_root)
        self.slurm = slurm  # None: no Slurm to ask (environment job ids are never confirmed)
        self.node_name = node_name or this_node()
        self.trust_environment = trust_environment
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
        """The job of a process in one of Slurm's cgroup hierarchies (v1 or v2)."""
        try:
            text = (self.proc / str(pid) / "cgroup").read_text()
        except OSError:
            return None
        for line in text.splitlines():
            path = line.split(":", 2)[-1]
            for pattern in SLURM_CGROUPS:
                match = pattern.match(path)
                if match:
                    return match.group(1)
        return None

    def environ(self, pid: int) -> dict[str, str]:
        """The process's SLURM_* variables, or {} when unreadable or slower than the timeout.

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
        env = {}
        for item in result[0].split(b"\0"):
            key, sep, value = item.partition(b"=")
            if sep and key.startswith(b"SLURM_"):
                env[key.decode(errors="replace")] = value.decode(errors="replace")
        return env

    # -- Slurm ---------------------------------------------------------------------------
    def _ask(self, job: str) -> JobInfo | None:
        if self.slurm is None:
            return None
        try:
            return self.slurm(job)
        except Exception as exc:  # noqa: BLE001 - an injected lookup must not kill the daemon
            log.warning("Slurm lookup of job %s failed: %s", job, exc)
            return None

    def confirms(self, job: str, uid: int) -> bool:
        """Whether Slurm says ``job`` is running, is ``uid``'s, and runs on this node."""
        info = self._ask(job)
        if info is None or not info.running:
            return False
        if info.uid is not None:
            if info.uid != uid:
                return False
        elif info.user != user_name(uid):
            return False
        return bool(info.node_list) and hostlist_contains(info.node_list or "", self.node_name)

    def job_size(self, job: str, env: dict[str, str] | None = None) -> int:
        """The job's node count from Slurm (cached); from ``env`` only for a job Slurm does
        not know, and only when the environment is trusted; else 1."""
        cached = self._sizes.get(job)
        if cached is not None:
            return cached
        info = self._ask(job)
        size = info.nodes if info is not None and info.nodes > 0 else None
        if size is None and self.trust_environment and env:
            for var in SIZE_VARS:
                value = env.get(var, "")
                if value.isdigit() and int(value) > 0:
                    size = int(value)
                    break
        if size is None:
            size = 1
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
        env: dict[str, str] = {}
        job = self.job_from_cgroup(pid)
        source = "cgroup"
        if job is None:
            env = self.environ(pid)
            claimed = next((env[v] for v in JOB_VARS if env.get(v)), "")
            if not claimed.isdigit():
                return pseudo_tag(uid, gid)
            if self.trust_environment:
                job, source = claimed, "environment (trusted by configuration)"
            elif self.confirms(claimed, uid):
                job, source = claimed, "environment, confirmed by Slurm"
            else:
                log.info(
                    "pid %d (uid %d) claims job %s, which Slurm does not confirm as its "
                    "own running job on %s: tagged as its user's pseudo job",
                    pid,
                    uid,
                    claimed,
                    self.node_name,
                )
                return pseudo_tag(uid, gid)
        nodes = self.job_size(job, env)
        log.debug("pid %d: job %s (from %s), %d node(s)", pid, job, source, nodes)
        return JobTag(job_id=job, user=user_name(uid), group=group_name(gid), nodes=nodes)
