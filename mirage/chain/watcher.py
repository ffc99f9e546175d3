"""The watcher: one process that drives one chain until it ends.

Started in the background by ``mirage chain submit`` (or by the user unit
``systemd/user/mirage-watcher@.service``); ``mirage chain watch ID`` runs it in the
foreground. An exclusive lock on the chain's ``watcher.lock`` makes sure that only one
watcher (or agentd) drives a chain; a restarted watcher reconciles with Slurm first, so a
crash never duplicates nor skips a segment.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hpcbase.slurm import RetryPolicy, SlurmClient, SlurmError, SlurmUnavailable, get_client
from mirage.chain import paths
from mirage.chain.driver import ChainDriver, Decider
from mirage.chain.reconcile import ReconcileError, reconcile
from mirage.chain.store import ACTIVE, ChainStore
from mirage.live.decisions import DecisionService, PolicyError
from mirage.live.history import QueueHistory
from mirage.live.remote import AgentdUnavailable, RemoteDecider
from mirage.observation import DECISION_INTERVAL, SAMPLE_INTERVAL, WINDOW

log = logging.getLogger(__name__)

#: Watcher settings stored with each chain (``mirage chain submit`` options).
DEFAULT_SETTINGS: dict[str, Any] = {
    "decision_interval": DECISION_INTERVAL,
    "sample_interval": SAMPLE_INTERVAL,
    "window": WINDOW,
    "poll_interval": 30.0,
    "min_interval": 10.0,
    "retry_attempts": 4,
    "retry_timeout": 30.0,
    "agentd_url": "",
    "slurm_conf": "",
    "time_scale": 1.0,
}


#: The watcher's exit status when its chain failed or was cancelled (no restart needed).
EXIT_CHAIN_FAILED = 4


class WatcherBusy(RuntimeError):
    """Another process drives this chain."""


@contextmanager
def chain_lock(root: Path, chain_id: str) -> Iterator[None]:
    """Hold the chain's driver lock (non-blocking; raises :class:`WatcherBusy`)."""
    path = paths.chain_dir(root, chain_id) / "watcher.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise WatcherBusy(f"chain {chain_id} is already driven by process {holder}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def settings_of(stored: dict[str, Any]) -> dict[str, Any]:
    """The stored settings over the defaults. On a time-compressed cluster (``time_scale``
    k), sample and decision intervals that were not given are the site's divided by k."""
    given = {key: value for key, value in stored.items() if value is not None}
    k = float(given.get("time_scale") or 1.0)
    intervals = ("sample_interval", "decision_interval")
    scaled = {key: DEFAULT_SETTINGS[key] / k for key in intervals if key not in given}
    return {**DEFAULT_SETTINGS, **scaled, **given}


def client_for(settings: dict[str, Any]) -> SlurmClient:
    policy = RetryPolicy(
        attempts=int(settings["retry_attempts"]),
        timeout=float(settings["retry_timeout"]),
        backoff=min(1.0, float(settings["retry_timeout"])),
    )
    return get_client(
        conf=settings["slurm_conf"] or None,
        min_interval=float(settings["min_interval"]),
        policy=policy,
    )


def _local_service(root: Path, s: dict[str, Any]) -> DecisionService:
    history = QueueHistory(
        window=int(s["window"]),
        sample_interval=float(s["sample_interval"]),
        path=root / "history.npz",
        time_scale=float(s["time_scale"]),
    )
    try:
        history.load()
    except Exception as e:  # a damaged history file: start afresh, say so
        log.warning("%s", e)
    return DecisionService(history, float(s["decision_interval"]))


def watch(
    root: Path,
    chain_id: str,
    stop: threading.Event | None = None,
    client: SlurmClient | None = None,
) -> int:
    """Drive ``chain_id`` until it ends (or ``stop`` is set). Returns 0 when it completed
    (or ``stop`` came first), :data:`EXIT_CHAIN_FAILED` when it failed or was cancelled."""
    stop = stop or threading.Event()
    store = ChainStore(root)
    try:
        chain = store.chain(chain_id)
        s = settings_of(chain.settings)
        with chain_lock(root, chain_id):
            client = client or client_for(s)
            service: DecisionService | None = None
            decider: Decider
            if s["agentd_url"]:
                decider = RemoteDecider(s["agentd_url"])
            else:
                service = decider = _local_service(root, s)
            driver = ChainDriver(
                store,
                client,
                decider,
                decision_interval=float(s["decision_interval"]),
                poll_age=max(float(s["poll_interval"]) / 2, 0.0),
            )
            log.info("watching chain %s (pid %d)", chain_id, os.getpid())
            reconciled = False
            while not stop.is_set():
                try:
                    if not reconciled:  # first thing after a (re)start
                        reconcile(store, client, chain_id, time.time())
                        reconciled = True
                    if service is not None and service.history.due():
                        service.sample(client)
                    if not driver.tick(chain_id):
                        break
                except (SlurmUnavailable, AgentdUnavailable) as e:
                    log.warning("chain %s: %s; trying again", chain_id, e)
                except ReconcileError as e:
                    driver.fail(chain_id, str(e))
                    break
                except PolicyError as e:
                    driver.fail(chain_id, f"policy {chain.policy}: {e}")
                    break
                except SlurmError as e:
                    if store.chain(chain_id).status != ACTIVE:
                        break
                    log.warning("chain %s: %s; trying again", chain_id, e)
                stop.wait(float(s["poll_interval"]))
        final = store.chain(chain_id)
        log.info("chain %s: %s %s", chain_id, final.status, final.reason)
        return EXIT_CHAIN_FAILED if final.status in ("failed", "cancelled") else 0
    finally:
        store.close()


def spawn(root: Path, chain_id: str) -> int:
    """Start a detached watcher process for ``chain_id``; returns its pid."""
    logf = paths.chain_dir(root, chain_id) / "watcher.log"
    env = {**os.environ, "MIRAGE_STATE_DIR": str(root)}
    with open(logf, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mirage.chain.cli", "watch", chain_id],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            close_fds=True,
        )
    return proc.pid


def install_stop_signals(stop: threading.Event) -> None:
    """SIGTERM/SIGINT end the watcher cleanly (after the current step)."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
