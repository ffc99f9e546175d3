"""SWF as other archives write it: no header, extra trailing fields, absolute Unix times."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.traces import TraceError, detect_format, read_trace
from sim.traces.model import ARRAY_FIELDS
from sim.traces.swf import absolute_times, split_fields

SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces"
ARRAYS = ARRAY_FIELDS
EXTRAS = [
    "",
    " 7",
    " normal",
    " {n1, n2}",
    " {cn001,  cn002, cn003} gpu ib,hdr",
    " q_long {a} 12 {} x=1",
    "\t{n5,\tn6}\tdebug",
]


def row(job, submit, wait=0, run=60, procs=2, req=600, status=1, user=3, extra=""):
    return (
        f"{job} {submit} {wait} {run} {procs} -1 -1 {procs} {req} -1 {status} "
        f"{user} 1 -1 1 1 -1 -1{extra}\n"
    )


def write(tmp_path: Path, text: str, name: str = "w.swf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def same_jobs(a, b) -> None:
    for name in ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.start_epoch == b.start_epoch and a.user_names == b.user_names


def test_split_fields_keeps_brace_lists_whole():
    assert split_fields("1 2 {n1, n2} q {a b c}x y{") == [
        "1",
        "2",
        "{n1, n2}",
        "q",
        "{a b c}x",
        "y{",
    ]
    assert split_fields("  \t ") == []


def test_headerless_swf_is_detected_and_read_like_the_headed_one(tmp_path):
    body = "".join(row(i, 10 * i, wait=i % 4, extra=EXTRAS[i % len(EXTRAS)]) for i in range(1, 50))
    assert detect_format(body) == "swf"
    plain = read_trace(write(tmp_path, body, "plain.swf"))
    headed = read_trace(write(tmp_path, "; MaxProcs: 2\n;\n" + body, "headed.swf"))
    same_jobs(plain, headed)
    assert plain.total_units == 2 and plain.warnings == []
    assert any("no MaxProcs/MaxNodes header" in n for n in plain.notes)
    assert headed.notes == []


@pytest.mark.parametrize("extra", EXTRAS)
def test_any_trailing_fields_are_ignored_on_both_paths(tmp_path, extra):
    rows = "".join(row(i, 7 * i, procs=1 + i % 8, extra=extra * (i % 3)) for i in range(1, 200))
    fast = read_trace(write(tmp_path, rows, "fast.swf"))
    slow = read_trace(write(tmp_path, rows + "; café\n", "slow.swf"))  # non-ASCII: line by line
    reference = read_trace(
        write(tmp_path, "".join(row(i, 7 * i, procs=1 + i % 8) for i in range(1, 200)), "ref.swf")
    )
    same_jobs(fast, reference)
    same_jobs(slow, reference)
    assert fast.warnings == slow.warnings == []


def test_a_brace_list_on_the_first_line_is_still_swf():
    assert detect_format(row(1, 0, extra=" {n1, n2}") + row(2, 5)) == "swf"
    assert (
        detect_format(
            "1 0 0 60 {n1, n2} -1 -1 2 600 -1 1 3 1 -1 1 1 -1 -1\n" + row(2, 5) + row(3, 6)
        )
        == "swf"
    )  # most lines are rows


def test_headerless_absolute_unix_times(tmp_path):
    t0 = 1_027_839_845
    body = "".join(row(i, t0 + 60 * i, wait=5) for i in range(1, 20))
    trace = read_trace(write(tmp_path, body))
    assert trace.start_epoch == t0 + 60
    assert trace.submit[0] == 0 and trace.submit[-1] == 60 * 18
    assert trace.recorded_start[0] == 5
    (note,) = [n for n in trace.notes if "absolute" in n]
    assert "earliest 1027839905 = 2002-07-28T07:05:05Z" in note


def test_absolute_times_under_a_unix_start_header(tmp_path):
    t0 = 1_027_839_845
    body = "".join(row(i, t0 + 60 * i) for i in range(1, 5))
    trace = read_trace(write(tmp_path, f"; UnixStartTime: {t0}\n" + body))
    assert trace.start_epoch == t0 + 60  # not 2 * t0
    assert any("UnixStartTime 1027839845 ignored" in n for n in trace.notes)
    # offsets under the same header stay offsets
    trace = read_trace(write(tmp_path, f"; UnixStartTime: {t0}\n" + row(1, 30) + row(2, 90)))
    assert trace.start_epoch == t0 + 30 and not [n for n in trace.notes if "absolute" in n]


def test_absolute_time_rule():
    assert not absolute_times(0.0, None)
    assert not absolute_times(9.9e7, None)  # three years into an offset log: offsets
    assert absolute_times(1.6e9, None)
    assert absolute_times(1.6e9, 1_500_000_000)
    assert not absolute_times(1.2e8, 1_500_000_000)  # a long offset log under its header


def test_unreadable_rows_are_named_by_line_and_field(tmp_path):
    text = (
        row(1, 0)
        + "2 10 0 60 2 -1 -1 2 600 -1 1 3 1 -1 1 1 -1 normal\n"  # 17 fields + queue name
        + "3 20 0 60 {n1, n2} -1 -1 2 600 -1 1 3 1 -1 1 1 -1 -1\n"  # list in a number field
        + "4 30 0 60\n"
        + row(5, 40, extra=" {n1, n2")
    )  # unclosed list after the 18 fields: ignored
    path = write(tmp_path, text)
    trace = read_trace(path)
    assert trace.job_id.tolist() == [1, 5]
    got = {w.line: w.reason for w in trace.warnings}
    assert "field 18 (think time) is not a number: 'normal'" in got[2]
    assert "field 5 (allocated processors) is not a number: '{n1, n2}'" in got[3]
    assert "expected 18 SWF fields, found 4" in got[4]
    with pytest.raises(TraceError, match=r"w\.swf:2: field 18 \(think time\)"):
        read_trace(path, strict=True)


def test_nothing_swf_like_is_still_refused(tmp_path):
    with pytest.raises(TraceError, match="not a recognised trace"):
        read_trace(write(tmp_path, "1 2 3 {a b}\nq r s\n", "x.txt"))


@pytest.mark.skipif(not (SHARED / "hpc2n-excerpt.swf").exists(), reason="needs ../shared/traces")
def test_real_log_rewritten_without_header_with_absolute_times_and_node_lists(tmp_path):
    """The HPC2N excerpt as some archives write it: same jobs, same start."""
    original = read_trace(SHARED / "hpc2n-excerpt.swf")
    text = (SHARED / "hpc2n-excerpt.swf").read_text()
    unix_start = 1027839845
    out = []
    for k, line in enumerate(ln for ln in text.splitlines() if ln.strip() and ln[0] != ";"):
        f = line.split()
        f[1] = str(int(f[1]) + unix_start)
        out.append(" ".join(f) + f" {{n{k % 9}, n{k % 5}}} q{k % 3} ib,a100" * (k % 2))
    rewritten = read_trace(write(tmp_path, "\n".join(out) + "\n"), total_units=240)
    same_jobs(rewritten, original)
    assert any("absolute Unix seconds" in n for n in rewritten.notes)


def test_hashed_user_ids_are_read_and_coded_a_processor_count_that_large_is_not(tmp_path):
    """A converted log whose users are 14-digit hashes reads (ids are only names); a
    processor count of that size is still refused by line and field."""
    big, other = 92605928607567, 29946708553445
    text = row(1, 0, user=big) + row(2, 10, user=other) + row(3, 20, user=big)
    text += row(4, 30, procs=3_000_000_000)
    trace = read_trace(write(tmp_path, text))
    assert trace.job_id.tolist() == [1, 2, 3]
    assert trace.user[0] == trace.user[2] != trace.user[1]
    assert sorted(trace.user_names) == sorted([str(big), str(other)])
    got = {w.line: w.reason for w in trace.warnings}
    assert "processors 3e+09 out of range" in got[4]
