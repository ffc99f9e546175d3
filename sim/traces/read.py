"""``read_trace``: read any supported trace file, choosing the reader from its content."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from sim.traces import cache as trace_cache
from sim.traces.assemble import DEFAULT_LIMIT_FACTOR
from sim.traces.csvtrace import REQUIRED as CSV_REQUIRED
from sim.traces.csvtrace import header_roles, read_csv_trace
from sim.traces.jobcomp import looks_like_jobcomp, read_jobcomp
from sim.traces.model import Trace, TraceError
from sim.traces.sacct import read_sacct
from sim.traces.source import decode, load_raw
from sim.traces.swf import looks_like_swf_row, read_swf

FORMATS = ("auto", "swf", "sacct", "csv", "jobcomp")


def read_trace(
    path: str | os.PathLike[str],
    *,
    fmt: str = "auto",
    strict: bool = False,
    unit: str | None = None,
    total_units: int | None = None,
    tz: str | None = None,
    limit_factor: float = DEFAULT_LIMIT_FACTOR,
    cache: bool = False,
) -> Trace:
    """Read the trace at ``path`` (plain, gzip, bzip2 or xz) into a :class:`Trace`.

    ``fmt``: ``"auto"`` (from the content), ``"swf"``, ``"sacct"``, ``"csv"`` or
    ``"jobcomp"`` (Slurm's jobcomp/filetxt log).
    ``strict``: the first malformed row raises :class:`TraceError` instead of a warning.
    ``unit``: sacct, jobcomp: ``"nodes"`` (default), ``"procs"`` or ``"gpus"`` (from TRES);
    CSV: ``"nodes"``/``"gpus"`` when both columns exist; SWF: only the label.
    ``total_units``: the machine size, overriding the file's; larger jobs are skipped.
    ``tz``: IANA zone of naive timestamps (sacct, jobcomp, CSV; default UTC).
    ``limit_factor``: unknown limits become run time x this, rounded up to minutes.
    ``cache``: keep the parsed trace in a Parquet file beside the trace (or in the user
    cache folder when that folder is read-only) and use it while the file's content and
    these options are unchanged (:mod:`sim.traces.cache`; needs pyarrow, else ignored).
    Every failure is a :class:`TraceError` whose message names the file (and line).
    The trace's ``digest`` is the SHA-256 of the file's bytes.
    """
    name = os.fspath(path)
    if fmt not in FORMATS:
        raise TraceError(f"{name}: unknown trace format {fmt!r}; choose from {', '.join(FORMATS)}")
    if not limit_factor >= 1.0 or limit_factor == float("inf"):
        raise TraceError(f"{name}: limit_factor must be >= 1, not {limit_factor!r}")
    if total_units is not None and total_units <= 0:
        raise TraceError(f"{name}: total_units must be positive, not {total_units}")
    raw = load_raw(path)
    digest = hashlib.sha256(raw).hexdigest()
    key = ""
    cache = cache and len(raw) >= trace_cache.MIN_BYTES
    if cache:
        options = {
            "fmt": fmt,
            "strict": strict,
            "unit": unit,
            "total_units": total_units,
            "tz": tz,
            "limit_factor": limit_factor,
        }
        key = trace_cache.cache_key(digest, options)
        hit = trace_cache.load(Path(name), key, name)
        if hit is not None:
            return hit
    trace = _parse(decode(raw, name), name, fmt, strict, unit, total_units, tz, limit_factor)
    trace.digest = digest
    if cache:
        trace_cache.store(trace, Path(name), key)
    return trace


def _parse(
    text: str,
    name: str,
    fmt: str,
    strict: bool,
    unit: str | None,
    total_units: int | None,
    tz: str | None,
    limit_factor: float,
) -> Trace:
    kind = detect_format(text, name) if fmt == "auto" else fmt
    try:
        if kind == "swf":
            return read_swf(
                text,
                name,
                strict=strict,
                unit=unit,
                total_units=total_units,
                limit_factor=limit_factor,
            )
        readers = {"sacct": read_sacct, "jobcomp": read_jobcomp}
        reader = readers.get(kind, read_csv_trace)
        return reader(
            text,
            name,
            strict=strict,
            unit=unit,
            total_units=total_units,
            tz=tz,
            limit_factor=limit_factor,
        )
    except TraceError:
        raise
    except ValueError as exc:  # e.g. an unknown time zone
        raise TraceError(f"{name}: {exc}") from None


def detect_format(text: str, path: str = "<trace>") -> str:
    """``"swf"``, ``"sacct"``, ``"csv"`` or ``"jobcomp"`` from the first lines; TraceError
    if none fits."""
    lines = [ln for ln in text[:65536].splitlines()[:50] if ln.strip()]
    if not lines:
        raise TraceError(f"{path}: empty file, no jobs")
    first = lines[0].strip()
    if first.startswith(";"):
        return "swf"
    if looks_like_jobcomp(first):
        return "jobcomp"
    header = lines[1].strip() if first.isdigit() and len(lines) > 1 else first
    tokens = {t.strip().lower() for t in re.split(r"[\s|,]+", header) if t.strip()}
    if tokens & {"jobid", "jobidraw"}:
        return "sacct"
    if "," in header and set(CSV_REQUIRED) <= set(header_roles(header.split(","))):
        return "csv"
    if "," in header and "job_id" in tokens:
        return "csv"  # the CSV reader names the missing columns
    # SWF without a ';' header: rows of >= 18 numbers, possibly followed by other fields
    # ({node lists}, queue names); the first row, or most of the first lines, must be one.
    swf_rows = sum(looks_like_swf_row(ln) for ln in lines)
    if looks_like_swf_row(first) or swf_rows * 2 > len(lines):
        return "swf"
    raise TraceError(
        f"{path}: not a recognised trace (SWF, sacct export, Slurm jobcomp log or CSV with a "
        "job_id header); "
        f"line 1 starts {first[:60]!r}"
    )
