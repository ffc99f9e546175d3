"""The chain state store: SQLite in WAL mode, one database per user state directory.

Every submission is recorded as an *intent* (committed) before ``sbatch`` runs, then
completed with the job id; a watcher that dies between the two finds the intent on restart
and reconciles it against Slurm's tagged jobs (:mod:`mirage.chain.reconcile`).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS chains (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    script TEXT NOT NULL,
    workdir TEXT NOT NULL,
    segments INTEGER NOT NULL,
    policy TEXT NOT NULL,
    keep_going INTEGER NOT NULL,
    sbatch_args TEXT NOT NULL,
    driver TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    updated REAL NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS segments (
    chain_id TEXT NOT NULL REFERENCES chains(id),
    idx INTEGER NOT NULL,
    status TEXT NOT NULL,
    job_id INTEGER,
    intent_at REAL NOT NULL,
    submitted_at REAL,
    how TEXT NOT NULL,
    prev_running INTEGER NOT NULL DEFAULT 0,
    slurm_state TEXT,
    start REAL,
    end_time REAL,
    exit_code INTEGER,
    gap REAL,
    PRIMARY KEY (chain_id, idx)
);
CREATE TABLE IF NOT EXISTS decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chain_id TEXT NOT NULL,
    segment INTEGER NOT NULL,
    time REAL NOT NULL,
    policy TEXT NOT NULL,
    action TEXT NOT NULL,
    inputs TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chain_id TEXT NOT NULL,
    time REAL NOT NULL,
    what TEXT NOT NULL
);
"""

#: Chain statuses; only ``active`` chains are driven.
ACTIVE, COMPLETED, FAILED, CANCELLED = "active", "completed", "failed", "cancelled"
#: Segment statuses.
INTENT, SUBMITTED, ENDED = "intent", "submitted", "ended"


@dataclass(frozen=True, slots=True)
class Chain:
    id: str
    created: float
    script: str
    workdir: str
    segments: int
    policy: str
    keep_going: bool
    sbatch_args: list[str]
    driver: str
    status: str
    reason: str
    updated: float
    settings: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Segment:
    chain_id: str
    idx: int
    status: str
    job_id: int | None
    intent_at: float
    submitted_at: float | None
    how: str
    prev_running: bool
    slurm_state: str | None
    start: float | None
    end_time: float | None
    exit_code: int | None
    gap: float | None


def _chain(row: sqlite3.Row) -> Chain:
    d = dict(row)
    d["keep_going"] = bool(d["keep_going"])
    d["sbatch_args"] = json.loads(d["sbatch_args"])
    d["settings"] = json.loads(d["settings"])
    return Chain(**d)


def _segment(row: sqlite3.Row) -> Segment:
    d = dict(row)
    d["prev_running"] = bool(d["prev_running"])
    return Segment(**d)


class ChainStore:
    """The chains of one state directory (``chains.db``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = self.root / "chains.db"
        self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA busy_timeout=30000")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One committed transaction (``BEGIN IMMEDIATE``: writers queue up)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ---- chains --------------------------------------------------------------------------
    def create_chain(
        self,
        script: str,
        workdir: str,
        segments: int,
        policy: str,
        keep_going: bool,
        sbatch_args: list[str],
        driver: str,
        settings: dict[str, Any] | None = None,
    ) -> Chain:
        """A new active chain; ``settings`` (intervals, agentd URL...) drive its watcher."""
        now = time.time()
        with self.tx() as db:
            while True:
                cid = secrets.token_hex(4)
                if db.execute("SELECT 1 FROM chains WHERE id=?", (cid,)).fetchone() is None:
                    break
            db.execute(
                "INSERT INTO chains VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    cid,
                    now,
                    script,
                    workdir,
                    segments,
                    policy,
                    int(keep_going),
                    json.dumps(sbatch_args),
                    driver,
                    ACTIVE,
                    "",
                    now,
                    json.dumps(settings or {}, sort_keys=True),
                ),
            )
            db.execute(
                "INSERT INTO events (chain_id, time, what) VALUES (?,?,?)",
                (cid, now, f"created: {segments} segments, policy {policy}"),
            )
        return self.chain(cid)

    def chain(self, chain_id: str) -> Chain:
        row = self.db.execute("SELECT * FROM chains WHERE id=?", (chain_id,)).fetchone()
        if row is None:
            raise KeyError(chain_id)
        return _chain(row)

    def chains(self, status: str | None = None, driver: str | None = None) -> list[Chain]:
        q, args = "SELECT * FROM chains WHERE 1=1", []
        if status:
            q += " AND status=?"
            args.append(status)
        if driver:
            q += " AND driver=?"
            args.append(driver)
        return [_chain(r) for r in self.db.execute(q + " ORDER BY created", args)]

    def set_status(self, chain_id: str, status: str, reason: str = "") -> None:
        now = time.time()
        with self.tx() as db:
            db.execute(
                "UPDATE chains SET status=?, reason=?, updated=? WHERE id=?",
                (status, reason, now, chain_id),
            )
            db.execute(
                "INSERT INTO events (chain_id, time, what) VALUES (?,?,?)",
                (chain_id, now, f"{status}{': ' + reason if reason else ''}"),
            )

    def event(self, chain_id: str, what: str) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO events (chain_id, time, what) VALUES (?,?,?)",
                (chain_id, time.time(), what),
            )

    def events(self, chain_id: str) -> list[tuple[float, str]]:
        rows = self.db.execute(
            "SELECT time, what FROM events WHERE chain_id=? ORDER BY seq", (chain_id,)
        )
        return [(r[0], r[1]) for r in rows]

    # ---- segments ------------------------------------------------------------------------
    def segments(self, chain_id: str) -> list[Segment]:
        rows = self.db.execute("SELECT * FROM segments WHERE chain_id=? ORDER BY idx", (chain_id,))
        return [_segment(r) for r in rows]

    def record_intent(self, chain_id: str, idx: int, how: str, prev_running: bool) -> None:
        """Commit the intent to submit segment ``idx`` (before sbatch runs); refuses a second
        intent for the same segment."""
        with self.tx() as db:
            db.execute(
                "INSERT INTO segments (chain_id, idx, status, intent_at, how, prev_running) "
                "VALUES (?,?,?,?,?,?)",
                (chain_id, idx, INTENT, time.time(), how, int(prev_running)),
            )

    def record_submitted(
        self, chain_id: str, idx: int, job_id: int, submitted_at: float | None = None
    ) -> None:
        with self.tx() as db:
            db.execute(
                "UPDATE segments SET status=?, job_id=?, submitted_at=? WHERE chain_id=? AND idx=?",
                (SUBMITTED, job_id, submitted_at or time.time(), chain_id, idx),
            )

    def drop_intent(self, chain_id: str, idx: int) -> None:
        """Forget an intent whose sbatch surely did not create a job."""
        with self.tx() as db:
            db.execute(
                "DELETE FROM segments WHERE chain_id=? AND idx=? AND status=?",
                (chain_id, idx, INTENT),
            )

    def update_segment(self, chain_id: str, idx: int, **fields: Any) -> None:
        if not fields:
            return
        cols = ", ".join(f"{k}=?" for k in fields)
        with self.tx() as db:
            db.execute(
                f"UPDATE segments SET {cols} WHERE chain_id=? AND idx=?",
                (*fields.values(), chain_id, idx),
            )

    # ---- decisions -----------------------------------------------------------------------
    def log_decision(
        self,
        chain_id: str,
        segment: int,
        when: float,
        policy: str,
        action: str,
        inputs: dict[str, Any],
    ) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO decisions (chain_id, segment, time, policy, action, inputs) "
                "VALUES (?,?,?,?,?,?)",
                (chain_id, segment, when, policy, action, json.dumps(inputs, sort_keys=True)),
            )

    def decisions(self, chain_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT segment, time, policy, action, inputs FROM decisions WHERE chain_id=? "
            "ORDER BY seq",
            (chain_id,),
        )
        return [
            {
                "segment": r[0],
                "time": r[1],
                "policy": r[2],
                "action": r[3],
                "inputs": json.loads(r[4]),
            }
            for r in rows
        ]
