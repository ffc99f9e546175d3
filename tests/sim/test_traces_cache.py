"""The Parquet cache of parsed traces: hits, misses, read-only folders, no pyarrow."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from sim.traces import read_trace
from sim.traces import swf as swf_module
from sim.traces.cache import cache_paths
from sim.traces.model import ARRAY_FIELDS

pytest.importorskip("pyarrow")

FIELDS = ARRAY_FIELDS


def swf_text(n: int = 50, bad: bool = True) -> str:
    rows = "".join(
        f"{i} {10 * i} {i % 7} {60 + i} {1 + i % 4} -1 -1 {1 + i % 4} 600 -1 1 "
        f"{i % 5} 1 -1 1 1 -1 -1\n"
        for i in range(1, n)
    )
    return "; MaxProcs: 8\n" + rows + ("1 2 3\n" if bad else "")


def same(a, b) -> None:
    for name in FIELDS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    for name in (
        "names",
        "unit",
        "total_units",
        "start_epoch",
        "fmt",
        "user_names",
        "group_names",
        "warnings",
        "notes",
        "digest",
        "source",
        "partitions",
        "size_stated",
    ):
        assert getattr(a, name) == getattr(b, name), name


@pytest.fixture(autouse=True)
def cache_small_files(monkeypatch):
    monkeypatch.setattr("sim.traces.cache.MIN_BYTES", 0)


@pytest.fixture
def user_cache(tmp_path, monkeypatch):
    folder = tmp_path / "user-cache"
    monkeypatch.setenv("HPCSIM_CACHE_DIR", str(folder))
    return folder


def test_second_read_comes_from_the_cache_beside_the_trace(tmp_path, monkeypatch, user_cache):
    path = tmp_path / "w.swf"
    path.write_text(swf_text())
    first = read_trace(path, cache=True)
    (entry,) = tmp_path.glob(".w.swf.*.parquet")
    assert first.warnings and "w.swf:51" in str(first.warnings[0])

    def refuse(*a, **k):
        raise AssertionError("parsed again")

    monkeypatch.setattr(swf_module, "read_swf", refuse)
    monkeypatch.setattr("sim.traces.read.read_swf", refuse)
    again = read_trace(path, cache=True)
    same(again, first)
    assert len(first.digest) == 64 and not user_cache.exists()
    # other options are another entry; without cache=True nothing is looked up
    with pytest.raises(AssertionError, match="parsed again"):
        read_trace(path, cache=True, limit_factor=2.0)
    with pytest.raises(AssertionError, match="parsed again"):
        read_trace(path)
    assert entry.exists()


def test_an_edited_trace_is_parsed_again_and_the_stale_entry_removed(tmp_path, user_cache):
    path = tmp_path / "w.swf"
    path.write_text(swf_text(50))
    a = read_trace(path, cache=True)
    (old,) = tmp_path.glob(".w.swf.*.parquet")
    path.write_text(swf_text(60))
    b = read_trace(path, cache=True)
    assert len(a) == 49 and len(b) == 59 and a.digest != b.digest
    (new,) = tmp_path.glob(".w.swf.*.parquet")
    assert new != old


def test_read_only_folder_uses_the_user_cache(tmp_path, user_cache):
    folder = tmp_path / "archive"
    folder.mkdir()
    path = folder / "w.swf"
    path.write_text(swf_text())
    folder.chmod(0o555)
    try:
        first = read_trace(path, cache=True)
        assert not list(folder.glob(".*.parquet"))
        assert len(list((user_cache / "traces").glob("*.parquet"))) == 1
        same(read_trace(path, cache=True), first)
    finally:
        folder.chmod(0o755)


def test_damaged_entry_and_missing_pyarrow_fall_back_to_parsing(tmp_path, monkeypatch, user_cache):
    path = tmp_path / "w.swf"
    path.write_text(swf_text())
    first = read_trace(path, cache=True)
    (entry,) = tmp_path.glob(".w.swf.*.parquet")
    entry.write_bytes(b"PAR1 not really")
    same(read_trace(path, cache=True), first)
    entry.unlink()
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    same(read_trace(path, cache=True), first)
    assert not list(tmp_path.glob(".w.swf.*.parquet"))


def test_small_files_are_not_cached(tmp_path, monkeypatch, user_cache):
    monkeypatch.setattr("sim.traces.cache.MIN_BYTES", 10_000)
    path = tmp_path / "w.swf"
    path.write_text(swf_text())
    read_trace(path, cache=True)
    assert not list(tmp_path.glob(".*.parquet")) and not user_cache.exists()


def test_cache_paths_name_the_trace_and_the_key(tmp_path, user_cache):
    beside, user = cache_paths(tmp_path / "x.log", "abc")
    assert beside == tmp_path / ".x.log.abc.parquet"
    assert user == user_cache / "traces" / "abc.parquet"


def test_a_recorded_priority_comes_back_from_the_cache(tmp_path, monkeypatch, user_cache):
    path = tmp_path / "log.txt"
    path.write_text(
        "JobID|Submit|Start|End|NNodes|Priority\n"
        "1|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T01:00:00|2|1234\n"
        "2|2024-01-01T00:00:05|2024-01-01T00:02:00|2024-01-01T01:00:00|1|\n"
    )
    first = read_trace(path, cache=True)
    assert any(tmp_path.glob(".log.txt.*.parquet"))

    def refuse(*a, **k):
        raise AssertionError("parsed again")

    monkeypatch.setattr("sim.traces.read.read_sacct", refuse)
    again = read_trace(path, cache=True)
    same(again, first)
    assert again.recorded_priority[0] == 1234 and np.isnan(again.recorded_priority[1])


def test_a_changed_reader_makes_another_key(monkeypatch):
    """An entry an older reader wrote is never read back: the readers' code is in the key."""
    from sim.traces import cache

    key = cache.cache_key("ab" * 32, {"fmt": "swf"})
    assert cache.cache_key("ab" * 32, {"fmt": "swf"}) == key
    monkeypatch.setattr(cache, "reader_digest", lambda: "another reader")
    assert cache.cache_key("ab" * 32, {"fmt": "swf"}) != key


def test_a_headerless_logs_size_comes_back_as_not_stated(tmp_path, user_cache):
    path = tmp_path / "bare.swf"
    path.write_text(swf_text().replace("; MaxProcs: 8\n", ""))
    first = read_trace(path, cache=True)
    again = read_trace(path, cache=True)
    assert not first.size_stated and not again.size_stated
    same(again, first)
