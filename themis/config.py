"""The daemon's configuration: /etc/themis/themis.toml, validated with errors naming the field.

Every key is optional; command-line options override the file. See docs/themis.md for the list
and systemd/themis.toml for a commented example.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hpcbase.config import ConfigError, build_sections, load_toml
from themis.sched.policy import POLICIES
from themis.sched.registry import DISPATCHERS, make_dispatcher

LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True)
class MountConfig:
    allow_other: bool = True
    attr_timeout_seconds: float = 1.0
    entry_timeout_seconds: float = 1.0
    xattrs: bool = True
    keep_cache: bool = False  # keep the page cache across opens (stale if others write)
    max_tasks: int = 64  # concurrent FUSE request handlers
    max_background: int = 64  # kernel limit of async requests (readahead); 0 = kernel default
    datapath: str = "compiled"  # read/write in C threads ("python": on the event loop)
    data_threads: int = 64  # compiled data path: threads = requests the scheduler can see at once
    max_readahead_kb: int = 1024  # kernel readahead per file: FUSE reads up to 1 MiB
    writeback_cache: bool = False  # the kernel merges small writes (compiled data path only)
    splice_reads: bool = True  # compiled data path: reads answered by splice (no copy)
    splice_writes: bool = True  # compiled data path: write data spliced from /dev/fuse to the file
    cache_unchanged: bool = False  # keep cached pages of files unchanged since their last close


@dataclass(frozen=True)
class SchedulerConfig:
    policy: str = "size-fair"
    dispatcher: str = "lottery"
    max_inflight: int = 4  # chunks running against the backing store at once
    chunk_bytes: int = 1 << 20  # larger requests are split into chunks of this size
    io_threads: int = 0  # 0: pread/pwrite on the event loop (tmpfs); N: N threads (disks)
    user_weights: dict[str, float] = field(default_factory=dict)
    group_weights: dict[str, float] = field(default_factory=dict)
    dispatcher_options: dict[str, float] = field(default_factory=dict)  # tbf: rate, burst, ...


@dataclass(frozen=True)
class DeviceConfig:
    """Emulate a backing device of this bandwidth (0 = off: the backing store's own speed)."""

    bandwidth_bytes_per_second: float = 0.0
    shared_file: str = ""  # one emulated device for several daemons: its state file


@dataclass(frozen=True)
class TaggingConfig:
    environ_timeout_seconds: float = 0.2
    cache_size: int = 4096
    slurm_conf: str = ""  # SLURM_CONF for job lookups ("" = the environment's)
    slurm_cache_seconds: float = 30.0  # how long Slurm's answer about a job is reused
    node_name: str = ""  # this node's Slurm name ("" = the short host name)
    # believe SLURM_JOB_ID (and, for jobs Slurm does not know, SLURM_NNODES) unchecked:
    # users can then claim any job and size. Off by default; a warning is logged when on.
    trust_environment: bool = False


@dataclass(frozen=True)
class MetricsConfig:
    port: int = 0  # 0 = no metrics endpoint
    address: str = "127.0.0.1"
    job_ttl_seconds: float = 300.0
    update_seconds: float = 2.0


@dataclass(frozen=True)
class ClusterConfig:
    """Cluster mode (themis/cluster/): per-node daemons share one global policy through Redis."""

    url: str = ""  # redis://HOST:PORT/N; "local:" = this node alone, by rates; "" = off
    node: str = ""  # this node's name in the reports ("" = the host name)
    window_seconds: float = 0.5  # publish usage and recompute the allocation this often
    ttl_windows: float = 3.0  # a node's report expires after this many windows
    timeout_seconds: float = 0.25  # a slower Redis round trip counts as down: local-only
    capacity_bytes_per_second: float = 0.0  # the shared store's bandwidth; 0 = measured
    headroom: float = 1.1  # caps add up to this much of the measured aggregate (probing)
    key_prefix: str = "themis"
    username: str = ""  # Redis ACL user ("" = the default user)
    password_file: str = ""  # Redis password, first line; owner-only file ("" = none)


@dataclass(frozen=True)
class ThemisConfig:
    mount: MountConfig = field(default_factory=MountConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    device: DeviceConfig = field(default_factory=DeviceConfig)
    tagging: TaggingConfig = field(default_factory=TaggingConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    log_level: str = "info"
    source: str = "<defaults>"

    def with_overrides(self, **sections: dict[str, Any]) -> ThemisConfig:
        """A copy with some fields of some sections replaced (command-line options)."""
        cfg = self
        for name, values in sections.items():
            values = {k: v for k, v in values.items() if v is not None}
            if values:
                cfg = replace(cfg, **{name: replace(getattr(cfg, name), **values)})
        validate(cfg)
        return cfg


SECTIONS = {
    "mount": MountConfig,
    "scheduler": SchedulerConfig,
    "device": DeviceConfig,
    "tagging": TaggingConfig,
    "metrics": MetricsConfig,
    "cluster": ClusterConfig,
}


def validate(cfg: ThemisConfig) -> None:
    """Check ranges and names; raises ConfigError naming the file and field."""
    _check_scheduler(cfg.source, cfg.scheduler)
    _check_mount(cfg.source, cfg.mount)
    if cfg.device.bandwidth_bytes_per_second < 0:
        raise _bad(cfg.source, "device.bandwidth_bytes_per_second", "must be >= 0")
    _check_tagging_and_metrics(cfg.source, cfg.tagging, cfg.metrics)
    _validate_cluster(cfg.cluster, lambda name, text: _bad(cfg.source, name, text))
    if cfg.log_level not in LOG_LEVELS:
        raise _bad(
            cfg.source,
            "log_level",
            f"must be one of {', '.join(LOG_LEVELS)}, got {cfg.log_level!r}",
        )


def _bad(src: str, name: str, text: str) -> ConfigError:
    return ConfigError(f"{src}: {name}: {text}")


def _check_scheduler(src: str, s: SchedulerConfig) -> None:
    if s.policy not in POLICIES:
        raise _bad(
            src,
            "scheduler.policy",
            f"unknown policy {s.policy!r}; choose from {', '.join(POLICIES)}",
        )
    if s.dispatcher not in DISPATCHERS:
        raise _bad(
            src,
            "scheduler.dispatcher",
            f"unknown dispatcher {s.dispatcher!r}; choose from {', '.join(DISPATCHERS)}",
        )
    if s.dispatcher_options and s.dispatcher not in ("tbf", "gift"):
        raise _bad(src, "scheduler.dispatcher_options", f"{s.dispatcher} takes no options")
    try:
        make_dispatcher(s.dispatcher, **dict[str, Any](s.dispatcher_options))
    except (TypeError, ValueError) as exc:
        raise _bad(src, "scheduler.dispatcher_options", f"for {s.dispatcher}: {exc}") from None
    if not 1 <= s.max_inflight <= 1024:
        raise _bad(src, "scheduler.max_inflight", f"must be 1..1024, got {s.max_inflight}")
    if not 0 <= s.io_threads <= 1024:
        raise _bad(src, "scheduler.io_threads", f"must be 0..1024, got {s.io_threads}")
    if not 4096 <= s.chunk_bytes <= 64 << 20:
        raise _bad(src, "scheduler.chunk_bytes", f"must be 4096..67108864, got {s.chunk_bytes}")


def _check_mount(src: str, m: MountConfig) -> None:
    for name in ("attr_timeout_seconds", "entry_timeout_seconds"):
        if not 0 <= getattr(m, name) <= 3600:
            raise _bad(src, f"mount.{name}", f"must be 0..3600, got {getattr(m, name)}")
    if not 1 <= m.max_tasks <= 10000:
        raise _bad(src, "mount.max_tasks", f"must be 1..10000, got {m.max_tasks}")
    if not 0 <= m.max_background <= 65535:
        raise _bad(src, "mount.max_background", f"must be 0..65535, got {m.max_background}")
    if m.datapath not in ("compiled", "python"):
        raise _bad(src, "mount.datapath", f"must be compiled or python, got {m.datapath!r}")
    if not 1 <= m.data_threads <= 1024:
        raise _bad(src, "mount.data_threads", f"must be 1..1024, got {m.data_threads}")
    if not 0 <= m.max_readahead_kb <= 65536:
        raise _bad(src, "mount.max_readahead_kb", f"must be 0..65536, got {m.max_readahead_kb}")


def _check_tagging_and_metrics(src: str, t: TaggingConfig, me: MetricsConfig) -> None:
    if not 0 < t.environ_timeout_seconds <= 10:
        raise _bad(
            src,
            "tagging.environ_timeout_seconds",
            f"must be in (0, 10], got {t.environ_timeout_seconds}",
        )
    if t.cache_size < 1:
        raise _bad(src, "tagging.cache_size", f"must be >= 1, got {t.cache_size}")
    if not 0 <= t.slurm_cache_seconds <= 3600:
        raise _bad(
            src, "tagging.slurm_cache_seconds", f"must be 0..3600, got {t.slurm_cache_seconds}"
        )
    if not 0 <= me.port <= 65535:
        raise _bad(src, "metrics.port", f"must be 0..65535, got {me.port}")
    if me.job_ttl_seconds < 0:
        raise _bad(src, "metrics.job_ttl_seconds", f"must be >= 0, got {me.job_ttl_seconds}")
    if not 0.05 <= me.update_seconds <= 3600:
        raise _bad(src, "metrics.update_seconds", f"must be 0.05..3600, got {me.update_seconds}")


def _validate_cluster(c: ClusterConfig, bad: Any) -> None:
    if c.url and c.url != "local:" and not c.url.startswith(("redis://", "rediss://", "unix://")):
        raise bad("cluster.url", f"expected redis://HOST:PORT/N or local:, got {c.url!r}")
    if "@" in urlsplit(c.url).netloc:
        raise bad(
            "cluster.url",
            "holds credentials, which every user can read in the command line or the config "
            "file: put the password in cluster.password_file (and the user in cluster.username)",
        )
    if c.password_file:
        try:
            read_password_file(c.password_file)
        except ValueError as exc:
            raise bad("cluster.password_file", str(exc)) from None
    if not 0.05 <= c.window_seconds <= 60:
        raise bad("cluster.window_seconds", f"must be 0.05..60, got {c.window_seconds}")
    if not 1 <= c.ttl_windows <= 100:
        raise bad("cluster.ttl_windows", f"must be 1..100, got {c.ttl_windows}")
    if not 0 < c.timeout_seconds <= c.window_seconds:
        raise bad(
            "cluster.timeout_seconds",
            f"must be in (0, window_seconds={c.window_seconds}], got {c.timeout_seconds}",
        )
    if c.capacity_bytes_per_second < 0:
        raise bad("cluster.capacity_bytes_per_second", "must be >= 0")
    if not 1 <= c.headroom <= 4:
        raise bad("cluster.headroom", f"must be 1..4, got {c.headroom}")
    if not c.key_prefix or any(ch.isspace() for ch in c.key_prefix + c.node):
        raise bad("cluster.key_prefix", "must be non-empty, and it and cluster.node without spaces")


def read_password_file(path: str) -> str:
    """The Redis password in ``path`` (its first line). Users must not be able to read it,
    or they could write forged usage reports: the file must be a regular file, not a link,
    owned by this process's user or root, with no access for group or others. Raises
    ValueError saying which rule it breaks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise ValueError(f"{path}: {why}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path}: not a regular file")
        if st.st_uid not in (0, os.geteuid()):
            raise ValueError(f"{path}: owned by uid {st.st_uid}, not by root or this daemon")
        if st.st_mode & 0o077:
            raise ValueError(
                f"{path}: mode {stat.S_IMODE(st.st_mode):04o} lets others at it (chmod 600)"
            )
        text = os.read(fd, 4097)
    finally:
        os.close(fd)
    if len(text) > 4096:
        raise ValueError(f"{path}: longer than 4096 bytes")
    lines = text.decode("utf-8", "replace").splitlines()
    if not lines or not lines[0].strip():
        raise ValueError(f"{path}: empty (the password is its first line)")
    return lines[0].strip()


def parse(data: dict[str, Any], source: str) -> ThemisConfig:
    """Build a config from a parsed TOML document."""
    sections = build_sections(data, source, SECTIONS, top_level={"log_level": ""})
    cfg = ThemisConfig(**sections, source=source)
    validate(cfg)
    return cfg


def load(path: str | Path | None) -> ThemisConfig:
    """Read and validate a TOML file; None gives the defaults."""
    if path is None:
        return ThemisConfig()
    return parse(*load_toml(path))
