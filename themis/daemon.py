"""``themis mount BACKING MOUNTPOINT``: the fair-sharing FUSE proxy daemon.

SIGHUP re-reads the configuration file and switches policy live (queued and running I/O is
kept); SIGTERM/SIGINT unmount cleanly. A stale mount left by a killed daemon is cleared before
mounting again, so a restart resumes service.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pyfuse3
import trio

from hpcbase.config import ConfigError
from themis.cluster.link import ClusterLink
from themis.config import ThemisConfig, load
from themis.fs import fusectl
from themis.fs.datapath import CompiledDataPath, KernelOptions
from themis.fs.device import EmulatedDevice
from themis.fs.io import ScheduledIO
from themis.fs.lowlevel import install_fallocate, op_table
from themis.fs.operations import PassthroughFS
from themis.fs.shared_device import SharedEmulatedDevice
from themis.metrics import ThemisMetrics
from themis.sched.aio import Gate
from themis.sched.policy import Policy, PolicyError
from themis.sched.registry import make_dispatcher
from themis.sched.scheduler import Scheduler
from themis.tagging import SlurmJobs, Tagger

log = logging.getLogger("themis.daemon")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="themis mount", description=__doc__.splitlines()[0])
    p.add_argument("backing", help="the burst-buffer directory to serve")
    p.add_argument("mountpoint", help="where to mount the proxy")
    p.add_argument("--config", help="TOML configuration file (e.g. /etc/themis/themis.toml)")
    p.add_argument("--policy", help="sharing policy (overrides the file)")
    p.add_argument("--dispatcher", help="lottery, sfq, fifo, ... (overrides the file)")
    p.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port")
    p.add_argument("--metrics-address", help="address for the metrics endpoint")
    p.add_argument("--max-inflight", type=int, help="chunks running against the backing store")
    p.add_argument(
        "--device-bandwidth",
        type=float,
        help="emulate a backing device of this many bytes/s (benchmarks; 0 = off)",
    )
    p.add_argument(
        "--cluster",
        metavar="URL",
        help="cluster mode: share one global policy via Redis (redis://HOST:PORT/N)",
    )
    p.add_argument("--cluster-node", metavar="NAME", help="this node's name (default: host name)")
    p.add_argument(
        "--device-shared",
        metavar="FILE",
        help="emulated device state shared with other daemons (benchmarks)",
    )
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-file", help="log here instead of stderr")
    p.add_argument("--foreground", "-f", action="store_true", help="do not detach")
    return p


def overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The configuration fields the command line sets (they win over the file, also on SIGHUP)."""
    return {
        "scheduler": {
            "policy": args.policy,
            "dispatcher": args.dispatcher,
            "max_inflight": args.max_inflight,
        },
        "metrics": {"port": args.metrics_port, "address": args.metrics_address},
        "device": {
            "bandwidth_bytes_per_second": args.device_bandwidth,
            "shared_file": args.device_shared,
        },
        "cluster": {"url": args.cluster, "node": args.cluster_node},
    }


def make_policy(cfg: ThemisConfig) -> Policy:
    s = cfg.scheduler
    return Policy.from_name(s.policy, user_weights=s.user_weights, group_weights=s.group_weights)


class Daemon:
    """One mounted proxy: the FUSE operations, the scheduler, tagging and metrics."""

    def __init__(
        self,
        cfg: ThemisConfig,
        backing: str,
        mountpoint: str,
        config_path: str | None = None,
        cli: dict[str, dict[str, Any]] | None = None,
        tagger: Tagger | None = None,
    ) -> None:
        self.cfg = cfg
        self.backing = os.path.abspath(backing)
        self.mountpoint = os.path.abspath(mountpoint)
        self.config_path = config_path
        self.cli = cli or {}
        s = cfg.scheduler
        dispatcher = make_dispatcher(s.dispatcher, **dict[str, Any](s.dispatcher_options))
        self.cluster = ClusterLink(cfg.cluster) if cfg.cluster.url else None
        if self.cluster is not None:  # cluster mode: caps from the global allocation
            dispatcher = self.cluster.wrap(dispatcher)
        self.scheduler = Scheduler(
            make_policy(cfg), dispatcher, max_inflight=s.max_inflight, chunk_bytes=s.chunk_bytes
        )
        self.metrics = ThemisMetrics(job_ttl=cfg.metrics.job_ttl_seconds)
        t = cfg.tagging
        if t.trust_environment:
            log.warning(
                "%s: tagging.trust_environment is on: any user can claim any job id and "
                "size through SLURM_* variables",
                cfg.source,
            )
        if self.cluster is not None:
            self.cluster.attach(self.scheduler, self.metrics.registry)
        self.tagger = tagger or Tagger(
            slurm=SlurmJobs(t.slurm_conf or None, ttl=t.slurm_cache_seconds),
            node_name=t.node_name or None,
            trust_environment=t.trust_environment,
            environ_timeout=t.environ_timeout_seconds,
            cache_size=t.cache_size,
        )
        self.gate = Gate(self.scheduler)
        bandwidth, shared = cfg.device.bandwidth_bytes_per_second, cfg.device.shared_file
        device = SharedEmulatedDevice(bandwidth, shared) if shared else EmulatedDevice(bandwidth)
        self.io = ScheduledIO(self.gate, device, self.metrics, io_threads=s.io_threads)
        m = cfg.mount
        self.datapath: CompiledDataPath | None = None
        if m.datapath == "compiled" and not isinstance(self.scheduler, Scheduler):
            # a custom Python dispatcher runs in the reference scheduler, which C cannot call
            log.warning("%s: compiled data path off: reads and writes run in Python", cfg.source)
        elif m.datapath == "compiled":
            kernel = KernelOptions(
                max_readahead=max(m.max_readahead_kb, 128) << 10,
                max_background=m.max_background,
                writeback_cache=m.writeback_cache,
                splice_reads=m.splice_reads,
                splice_writes=m.splice_writes,
            )
            self.datapath = CompiledDataPath(self.scheduler, device, m.data_threads, kernel)
            self.metrics.io_source = self.datapath.totals
        self.ops = PassthroughFS(
            self.backing,
            self.io,
            self.tagger,
            activity=self.metrics,
            attr_timeout=cfg.mount.attr_timeout_seconds,
            entry_timeout=cfg.mount.entry_timeout_seconds,
            xattrs=cfg.mount.xattrs,
            keep_cache=cfg.mount.keep_cache,
            files=self.datapath,
            writeback_cache=self.datapath is not None and m.writeback_cache,
            cache_unchanged=m.cache_unchanged,
        )
        self._stop_metrics: Callable[[], None] | None = None
        self._backing_ok = True

    # -- control -------------------------------------------------------------------------
    def reload(self) -> bool:
        """Re-read the configuration file and switch policy/dispatcher live."""
        try:
            cfg = load(self.config_path).with_overrides(**self.cli)
            policy = make_policy(cfg)
            s = cfg.scheduler
            options: dict[str, Any] = dict(s.dispatcher_options)
            dispatcher = make_dispatcher(s.dispatcher, seed=self.scheduler.seed, **options)
            if self.cluster is not None:
                dispatcher = self.cluster.wrap(dispatcher)
        except (ConfigError, PolicyError, ValueError, TypeError) as exc:
            log.error("reload failed, keeping policy %s: %s", self.scheduler.policy.name, exc)
            self.metrics.reloaded(False)
            return False
        self.scheduler.set_policy(policy, dispatcher)
        self.scheduler.max_inflight = s.max_inflight  # takes effect as running chunks finish
        self.metrics.job_ttl = cfg.metrics.job_ttl_seconds
        self.cfg = replace(
            self.cfg,
            scheduler=s,
            metrics=replace(self.cfg.metrics, job_ttl_seconds=cfg.metrics.job_ttl_seconds),
        )
        log.info(
            "reloaded %s: policy %s, dispatcher %s",
            self.config_path or "<no file>",
            policy.name,
            self.scheduler.dispatcher.name,
        )
        self.metrics.reloaded(True)
        self.metrics.update(self.scheduler.stats())
        return True

    async def _signals(self) -> None:
        sigs = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
        with trio.open_signal_receiver(*sigs) as received:
            async for sig in received:
                if sig == signal.SIGHUP:
                    sd_notify("RELOADING=1")
                    self.reload()
                    sd_notify("READY=1")
                else:
                    log.info("%s: unmounting %s", signal.Signals(sig).name, self.mountpoint)
                    sd_notify("STOPPING=1")
                    pyfuse3.terminate()
                    return

    def check_backing(self) -> bool:
        """Log (once per change) and export whether the backing directory is there."""
        ok = self.ops.refresh_root()
        if ok != self._backing_ok:
            if ok:
                log.warning("backing directory %s is back", self.backing)
            else:
                log.error(
                    "backing directory %s is gone: callers get ENOENT/ESTALE until it returns",
                    self.backing,
                )
            self._backing_ok = ok
            self.metrics.backing.set(1 if ok else 0)
        return ok

    async def _metrics_loop(self) -> None:
        while True:
            self.check_backing()
            self.metrics.update(self.scheduler.stats())
            for job_id in self.metrics.expire():
                self.scheduler.forget(job_id)
                if self.datapath is not None:
                    self.datapath.forget(job_id)
            await trio.sleep(self.cfg.metrics.update_seconds)

    async def _tune_kernel(self) -> None:
        """Raise the kernel's limit of background requests once FUSE INIT is through."""
        await trio.sleep(0.2)
        m = self.cfg.mount
        await trio.to_thread.run_sync(
            fusectl.tune, self.mountpoint, m.max_background, m.max_readahead_kb
        )

    async def serve(self) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._signals)
            nursery.start_soon(self._metrics_loop)
            nursery.start_soon(self._tune_kernel)
            if self.cluster is not None:
                nursery.start_soon(self.cluster.run)
            await pyfuse3.main(min_tasks=4, max_tasks=self.cfg.mount.max_tasks)
            nursery.cancel_scope.cancel()

    def _install_datapath(self) -> None:
        """Hand the data operations to the compiled data path (or fallocate alone to Python)."""
        table = op_table() if self.datapath is not None else None
        if self.datapath is not None and table is not None:
            self.datapath.install(table)
            log.info("compiled data path: %d threads", self.datapath.threads)
            return
        if self.datapath is not None:
            log.warning("compiled data path not installed: reads and writes run in Python")
            self.ops.files = self.datapath = None
            self.ops.writeback_cache = False
            self.metrics.io_source = None
        install_fallocate(self.ops.fallocate)

    def run(self, ready: int | None = None) -> None:
        """Mount, serve until SIGTERM/SIGINT, unmount. ``ready`` is a pipe told "ok" once up."""
        fusectl.clear_dead_mounts(self.mountpoint)
        options = {"fsname=themis", "subtype=themis", "default_permissions"}
        if self.cfg.mount.allow_other:
            options.add("allow_other")
        pyfuse3.init(self.ops, self.mountpoint, options)
        self._install_datapath()
        try:
            if self.cfg.metrics.port:
                self._stop_metrics = self.metrics.serve(
                    self.cfg.metrics.port, self.cfg.metrics.address
                )
            log.info(
                "mounted %s on %s: policy %s, dispatcher %s, metrics port %s",
                self.backing,
                self.mountpoint,
                self.scheduler.policy.name,
                self.scheduler.dispatcher.name,
                self.cfg.metrics.port or "off",
            )
            if ready is not None:
                os.write(ready, b"ok")
                os.close(ready)
            sd_notify(f"READY=1\nMAINPID={os.getpid()}")
            trio.run(self.serve)
        finally:
            if self.datapath is not None:
                self.datapath.stop()  # queued requests answered before the session goes
            pyfuse3.close(unmount=True)
            self.ops.close_all()
            if self._stop_metrics is not None:
                self._stop_metrics()
            log.info("unmounted %s", self.mountpoint)


def sd_notify(message: str) -> None:
    """Tell systemd (Type=notify) about our state; a no-op outside systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(message.encode(), address)
    except OSError as exc:
        log.warning("cannot notify systemd at %s: %s", address, exc)


def _setup_logging(level: str, path: str | None) -> None:
    handler: logging.Handler = logging.FileHandler(path) if path else logging.StreamHandler()
    handler.setFormatter(
        logging.Formatter("%(asctime)s themis[%(process)d] %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def _raise_fd_limit() -> None:
    """Every inode the kernel holds keeps an O_PATH descriptor open: allow as many as we may."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _detach() -> int | None:
    """Fork into the background; the parent waits for "ok" (or an error) from the child."""
    rfd, wfd = os.pipe()
    if os.fork() > 0:
        os.close(wfd)
        message = b""
        while chunk := os.read(rfd, 4096):
            message += chunk
        if message == b"ok":
            os._exit(0)
        sys.stderr.write(message.decode(errors="replace") or "themis mount: daemon failed\n")
        os._exit(1)
    os.close(rfd)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    return wfd


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = load(args.config).with_overrides(**overrides(args))
    except ConfigError as exc:
        print(f"themis mount: error: {exc}", file=sys.stderr)
        return 2
    for what, path in (("backing directory", args.backing), ("mount point", args.mountpoint)):
        if not os.path.isdir(path) and not fusectl.fuse_mounts(path):  # a dead mount is cleared
            print(f"themis mount: error: {what} {path!r} is not a directory", file=sys.stderr)
            return 2
    _setup_logging(args.log_level or cfg.log_level, args.log_file)
    os.umask(0)  # the kernel already applied the caller's umask to every mode we receive
    _raise_fd_limit()
    ready = None if args.foreground else _detach()
    try:
        Daemon(cfg, args.backing, args.mountpoint, args.config, overrides(args)).run(ready)
    except (OSError, RuntimeError, ConfigError) as exc:
        log.error("cannot serve %s on %s: %s", args.backing, args.mountpoint, exc)
        if ready is not None:
            os.write(ready, f"themis mount: error: {exc}\n".encode())
        else:
            print(f"themis mount: error: {exc}", file=sys.stderr)
        return 1
    return 0
