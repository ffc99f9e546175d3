"""``mirage agentd``: the site daemon, one per cluster.

It samples the queue every ``history.sample_interval`` into the persisted history window,
serves decisions to users' watchers (``POST /v1/decide``), drives the chains of users who opt
in (``mirage chain submit --driver agentd`` in a state directory listed in
``chains.state_dirs``), and exports Prometheus metrics (``/metrics``) and health
(``/healthz``). SIGHUP reloads the configuration (an invalid one is refused and the old one
kept); SIGTERM and SIGINT stop it cleanly, saving the history.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from hpcbase.config import ConfigError
from hpcbase.slurm import (
    CliClient,
    CommandRunner,
    RetryPolicy,
    SlurmClient,
    SlurmError,
    SlurmUnavailable,
    get_client,
)
from mirage import config as config_mod
from mirage.chain.driver import ChainDriver
from mirage.chain.reconcile import ReconcileError
from mirage.chain.store import ACTIVE, ChainStore
from mirage.chain.watcher import WatcherBusy, chain_lock
from mirage.config import Config
from mirage.live.decisions import DecisionService, PolicyError
from mirage.live.history import HistoryError, QueueHistory
from mirage.live.http import AgentdServer
from mirage.metrics import Metrics

log = logging.getLogger("mirage.agentd")
DEFAULT_CONFIG = "/etc/mirage/mirage.toml"


def unsafe_state(path: Path) -> str | None:
    """Why the daemon must not drive chains from ``path``, or None. Their jobs are submitted
    as the daemon's user, so whoever can write the state could run anything as that user:
    ``path`` must be the daemon's own, not a link, and not writable by group or others."""
    try:
        st = path.lstat()
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return f"{path}: a symbolic link"
    if st.st_uid != os.geteuid():
        return f"{path}: owned by uid {st.st_uid}, not by this daemon's user ({os.geteuid()})"
    if st.st_mode & 0o022:
        return f"{path}: mode {stat.S_IMODE(st.st_mode):04o}: group or others may write it"
    return None


class Agentd:
    """The daemon's state; :meth:`run` is its loop."""

    def __init__(self, cfg: Config, registry: CollectorRegistry | None = None) -> None:
        self.metrics = Metrics(registry)
        self.stop_event = threading.Event()
        self.reload_requested = threading.Event()
        self._locks: dict[tuple[str, str], ExitStack] = {}
        self._stores: dict[str, ChainStore] = {}
        self._dir_notes: dict[str, str] = {}  # state dir -> why it is not driven (logged)
        self.last_sample_ok = False
        self.last_error = ""
        self.cfg = cfg
        self._apply(cfg)
        self.server = AgentdServer(
            cfg.http.listen, cfg.http.port, self.metrics, lambda: self.service, self.health
        )

    # ---- configuration -------------------------------------------------------------------
    def _client(self, cfg: Config) -> SlurmClient:
        s = cfg.slurm
        policy = RetryPolicy(
            attempts=s.retry_attempts, timeout=s.retry_timeout, backoff=min(1.0, s.retry_timeout)
        )
        if s.backend == "cli":
            env = {"SLURM_CONF": s.conf} if s.conf else {}
            runner = CommandRunner(policy, env=env, run=self.metrics.timed_run())
            return CliClient(min_interval=s.min_interval, runner=runner)
        return get_client(
            s.backend, conf=s.conf or None, min_interval=s.min_interval, policy=policy
        )

    def _apply(self, cfg: Config) -> None:
        h = cfg.history
        old = getattr(self, "history", None)
        if old is None or (old.window, old.sample_interval) != (h.window, h.sample_interval):
            if old is not None:
                old.save()
            history = QueueHistory(
                h.window,
                h.sample_interval,
                h.max_limit or None,
                path=Path(h.state_dir) / "history.npz",
            )
            try:
                if history.load():
                    log.info("history restored: %d samples", history.samples)
            except HistoryError as e:
                log.warning("%s; starting a new history", e)
        else:
            history = old
            history.max_limit_override = h.max_limit or None
        self.history = history
        self.metrics.history_samples.set(history.samples)
        self.service = DecisionService(
            history, cfg.decisions.decision_interval, allowed=set(cfg.decisions.policies)
        )
        self.client = self._client(cfg)
        self._drivers: dict[str, ChainDriver] = {}
        for d in list(self._stores):
            if d not in cfg.chains.state_dirs:
                self._release_dir(d)
        logging.getLogger("mirage").setLevel(cfg.log.level.upper())
        self.cfg = cfg

    def reload(self) -> bool:
        """Re-read the configuration file; keep the old one if the new one is invalid."""
        try:
            cfg = config_mod.load(self.cfg.path)
        except ConfigError as e:
            log.error("reload refused, keeping the old configuration: %s", e)
            self.metrics.reloads.labels("error").inc()
            return False
        if (cfg.http.listen, cfg.http.port) != (self.cfg.http.listen, self.cfg.http.port):
            log.warning(
                "http.listen/http.port changes need a restart; keeping %s:%d",
                self.cfg.http.listen,
                self.server.port,
            )
        self._apply(cfg)
        self.metrics.reloads.labels("ok").inc()
        log.info("configuration reloaded from %s", cfg.path)
        return True

    # ---- health --------------------------------------------------------------------------
    def health(self) -> tuple[bool, dict[str, Any]]:
        age = time.time() - self.history.last_sample if self.history.samples else None
        ok = self.last_sample_ok and age is not None and age <= 3 * self.history.sample_interval
        return ok, {
            "samples": self.history.samples,
            "last_sample_age_seconds": None if age is None else round(age, 1),
            "active_chains": len(self._locks),
            "last_error": self.last_error,
        }

    # ---- work ----------------------------------------------------------------------------
    def sample(self) -> None:
        try:
            self.service.sample(self.client, self.cfg.slurm.partition or None)
        except SlurmError as e:
            self.last_sample_ok = False
            self.last_error = str(e)
            self.metrics.sample_errors.inc()
            log.warning("queue sample failed: %s", e)
            return
        self.last_sample_ok = True
        self.metrics.samples.inc()
        self.metrics.history_samples.set(self.history.samples)
        self.metrics.last_sample.set(self.history.last_sample)

    def _release_dir(self, d: str) -> None:
        for key in [k for k in self._locks if k[0] == d]:
            self._locks.pop(key).close()
        store = self._stores.pop(d, None)
        if store:
            store.close()

    def _note_dir(self, d: str, level: int, why: str) -> None:
        """Log why a state directory is not driven, once until the reason changes."""
        if self._dir_notes.get(d) != why:
            log.log(level, "chains.state_dirs: %s %s", d, why)
            self._dir_notes[d] = why

    def _store(self, d: str) -> ChainStore | None:
        if d not in self._stores:
            if not (Path(d) / "chains.db").exists():
                self._note_dir(d, logging.WARNING, "has no chains.db yet")
                return None
            why = unsafe_state(Path(d)) or unsafe_state(Path(d) / "chains.db")
            if why:  # checked each pass until it is fixed
                self._note_dir(d, logging.ERROR, f"not driving its chains: {why}")
                return None
            self._dir_notes.pop(d, None)
            self._stores[d] = ChainStore(Path(d))
        return self._stores[d]

    def drive_chains(self) -> None:
        for d in self.cfg.chains.state_dirs:
            store = self._store(d)
            if store is None:
                continue
            driver = self._drivers.get(d)
            if driver is None:  # one per directory and configuration: paces decisions
                driver = self._drivers[d] = ChainDriver(
                    store,
                    self.client,
                    self.service,
                    decision_interval=self.cfg.decisions.decision_interval,
                    metrics=self.metrics,
                    poll_age=min(self.cfg.chains.poll_interval / 2, 30.0),
                )
            for chain in store.chains(status=ACTIVE, driver="agentd"):
                key = (d, chain.id)
                if key not in self._locks:
                    stack = ExitStack()
                    try:
                        stack.enter_context(chain_lock(Path(d), chain.id))
                    except WatcherBusy as e:
                        log.debug("%s", e)
                        continue
                    self._locks[key] = stack
                try:
                    active = driver.tick(chain.id)
                except (SlurmUnavailable, SlurmError) as e:
                    log.warning("chain %s: %s; trying again", chain.id, e)
                    self.last_error = str(e)
                    continue
                except (PolicyError, ReconcileError) as e:
                    driver.fail(chain.id, str(e))
                    active = False
                if not active:
                    self._locks.pop(key).close()
        self.metrics.active_chains.set(len(self._locks))

    def run(self) -> int:
        self.server.start()
        log.info(
            "agentd: serving on %s:%d; sampling every %g s",
            self.cfg.http.listen,
            self.server.port,
            self.history.sample_interval,
        )
        try:
            while not self.stop_event.is_set():
                if self.reload_requested.is_set():
                    self.reload_requested.clear()
                    self.reload()
                if self.history.due():
                    self.sample()
                self.drive_chains()
                wait = min(
                    self.cfg.chains.poll_interval,
                    max(self.history.last_sample + self.history.sample_interval - time.time(), 0.2)
                    if self.history.samples
                    else 1.0,
                )
                self.stop_event.wait(wait)
        finally:
            self.shutdown()
        return 0

    def shutdown(self) -> None:
        self.server.stop()
        try:
            self.history.save()
        except OSError as e:
            log.error("could not save the history: %s", e)
        for d in list(self._stores):
            self._release_dir(d)
        log.info("agentd stopped")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="mirage agentd", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=DEFAULT_CONFIG, help=f"TOML file (default {DEFAULT_CONFIG})")
    p.add_argument("--check", action="store_true", help="validate the configuration and exit")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        cfg = config_mod.load(args.config)
    except ConfigError as e:
        print(f"mirage agentd: error: {e}", file=sys.stderr)
        return 2
    if args.check:
        print(f"{cfg.path}: OK")
        return 0
    try:
        Path(cfg.history.state_dir).mkdir(parents=True, exist_ok=True)
        daemon = Agentd(cfg)
    except (OSError, SlurmError) as e:
        print(f"mirage agentd: error: {e}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGHUP, lambda *_: daemon.reload_requested.set())
    signal.signal(signal.SIGTERM, lambda *_: daemon.stop_event.set())
    signal.signal(signal.SIGINT, lambda *_: daemon.stop_event.set())
    return daemon.run()


if __name__ == "__main__":
    raise SystemExit(main())
