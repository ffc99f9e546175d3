"""A Parquet cache of parsed traces, keyed by the file's content hash and the reader options.

Only files of at least :data:`MIN_BYTES` are cached.
A parsed trace is stored beside its file as ``.NAME.KEY.parquet`` when that folder is
writable, else in the user cache folder (``$HPCSIM_CACHE_DIR``, else
``$XDG_CACHE_HOME/hpcsim``, else ``~/.cache/hpcsim``) under ``traces/KEY.parquet``. ``KEY``
hashes the file's SHA-256, the reader options and :data:`CACHE_VERSION`, so an edited file
or other options never meet a stale entry. Everything here is best effort: without pyarrow,
in a read-only folder, or with a damaged cache file, the trace is simply parsed again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path

import numpy as np

from hpcbase.atomic import atomic_write
from sim.traces.model import Trace, TraceWarning

#: Bump when the parsed form changes. The readers' own code is in the key too
#: (:func:`reader_digest`): an entry from an older reader is never read back.
CACHE_VERSION = 5
#: Smaller files are parsed every time (parsing them takes milliseconds).
MIN_BYTES = 1 << 20
ENV_DIR = "HPCSIM_CACHE_DIR"
_META = b"hpcsim.trace"
_ARRAYS = {
    "job_id": np.int64,
    "submit": np.float64,
    "runtime": np.float64,
    "limit": np.float64,
    "units": np.int64,
    "user": np.int64,
    "group": np.int64,
    "exit_code": np.int64,
    "recorded_start": np.float64,
    "recorded_priority": np.float64,
}


def user_cache_dir() -> Path:
    """The per-user cache folder (not created here)."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hpcsim"


def dir_writable(folder: Path) -> bool:
    """True when ``folder`` is a directory we may write in and whose mode allows writing at
    all (a folder marked read-only, such as a shared trace archive, is left alone even by
    root)."""
    try:
        st = folder.stat()
    except OSError:
        return False
    return folder.is_dir() and bool(st.st_mode & 0o222) and os.access(folder, os.W_OK | os.X_OK)


@functools.cache
def reader_digest() -> str:
    """SHA-256 of the trace readers' source (this package's modules): a reader that
    parses differently makes other cache keys (a log cached before SWF's partition field
    was read came back without its partitions)."""
    h = hashlib.sha256()
    for src in sorted(Path(__file__).parent.glob("*.py")):
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    return h.hexdigest()


def cache_key(digest: str, options: dict[str, object]) -> str:
    """The cache key of a file's content hash under the given reader options."""
    text = json.dumps(
        {"v": CACHE_VERSION, "reader": reader_digest(), "sha256": digest, **options},
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def cache_paths(path: Path, key: str) -> list[Path]:
    """Where the entry for ``path`` under ``key`` may be: beside it, then the user cache."""
    return [
        path.parent / f".{path.name}.{key}.parquet",
        user_cache_dir() / "traces" / f"{key}.parquet",
    ]


def load(path: Path, key: str, name: str) -> Trace | None:
    """The cached trace, or None (no entry, no pyarrow, unreadable entry)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    for candidate in cache_paths(path, key):
        if not candidate.is_file():
            continue
        try:
            table = pq.read_table(candidate)
            meta = json.loads(table.schema.metadata[_META])
            if meta.get("key") != key:
                continue
            return _from_table(table, meta, name)
        except Exception:  # noqa: BLE001 - a damaged cache entry is parsed again, never fatal
            continue
    return None


def store(trace: Trace, path: Path, key: str) -> Path | None:
    """Write the entry (atomically); returns where, or None when nowhere was writable."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    beside, user = cache_paths(path, key)
    target = beside if dir_writable(path.parent) else user
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        table = _to_table(trace, key, pa)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        atomic_write(target, sink.getvalue().to_pybytes())
        os.chmod(target, path.stat().st_mode & 0o666)  # readable by whoever reads the trace
    except Exception:  # noqa: BLE001 - no cache is a slower read, not an error
        return None
    if target == beside:
        _drop_stale(path, trace.digest, keep=target)
    return target


def _to_table(trace: Trace, key: str, pa):  # noqa: ANN001, ANN202 - pyarrow is optional
    columns = {name: pa.array(getattr(trace, name)) for name in _ARRAYS}
    has_names = any(trace.names)
    if has_names:
        columns["names"] = pa.array(trace.names, type=pa.string())
    if trace.partitions:
        columns["partitions"] = pa.array(trace.partitions, type=pa.string())
    meta = {
        "key": key,
        "digest": trace.digest,
        "unit": trace.unit,
        "total_units": trace.total_units,
        "size_stated": trace.size_stated,
        "start_epoch": trace.start_epoch,
        "fmt": trace.fmt,
        "user_names": trace.user_names,
        "group_names": trace.group_names,
        "notes": trace.notes,
        "has_names": has_names,
        "warnings": [[w.line, w.reason, w.kind, w.count] for w in trace.warnings],
    }
    return pa.table(columns).replace_schema_metadata({_META: json.dumps(meta).encode()})


def _from_table(table, meta: dict, name: str) -> Trace:  # noqa: ANN001 - pyarrow is optional
    arrays = {k: table.column(k).to_numpy().astype(t, copy=False) for k, t in _ARRAYS.items()}
    n = table.num_rows
    names = table.column("names").to_pylist() if meta["has_names"] else [""] * n
    has_parts = "partitions" in table.column_names
    parts = table.column("partitions").to_pylist() if has_parts else []
    return Trace(
        **arrays,
        names=names,
        partitions=parts,
        unit=meta["unit"],
        total_units=meta["total_units"],
        size_stated=bool(meta.get("size_stated", True)),
        start_epoch=float(meta["start_epoch"]),
        source=name,
        fmt=meta["fmt"],
        user_names=list(meta["user_names"]),
        group_names=list(meta["group_names"]),
        warnings=[TraceWarning(name, int(ln), r, k, int(c)) for ln, r, k, c in meta["warnings"]],
        notes=list(meta["notes"]),
        digest=meta["digest"],
    )


def _drop_stale(path: Path, digest: str, keep: Path) -> None:
    """Remove entries beside ``path`` made from other contents of the file."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return
    for old in path.parent.glob(f".{path.name}.*.parquet"):
        if old == keep:
            continue
        with contextlib.suppress(Exception):
            meta = json.loads(pq.read_schema(old).metadata[_META])
            if meta.get("digest") != digest:
                old.unlink()
