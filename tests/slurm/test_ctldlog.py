"""slurmctld's log read back (hpcbase.slurm.ctldlog): the epilog's end, both ways Slurm
22.05 writes it."""

from __future__ import annotations

from hpcbase.slurm.ctldlog import TIMING_LINES, read_events, unix_time

LINES = [
    "[2026-12-01T22:01:49.648] _job_complete: JobId=4 done\n",
    "[2026-12-01T22:01:49.648] debug2: Spawning RPC agent for msg_type REQUEST_TERMINATE_JOB\n",
    # slurmd answered "already complete": slurmctld's agent marks the epilog done, and only
    # DebugFlags=TraceJobs names it
    "[2026-12-01T22:01:49.650] TRACE_JOBS: job_epilog_complete: enter JobId=4\n",
    "[2026-12-01T22:01:51.386] _job_complete: JobId=2 done\n",
    # slurmd sent the epilog's end as a message of its own (debug2), then the same function
    "[2026-12-01T22:01:51.391] debug2: _slurm_rpc_epilog_complete: JobId=2 Node=vm usec=31\n",
    "[2026-12-01T22:01:51.392] TRACE_JOBS: job_epilog_complete: enter JobId=2\n",
    "[2026-12-01T22:01:51.393] TRACE_JOBS: _job_complete: enter JobId=2\n",  # not an epilog
    "[2026-12-01T22:01:51.394] debug2: _slurm_rpc_epilog_complete: JobId=21 Node=vm usec=9\n",
]


def test_both_kinds_of_epilog_end_are_read_with_their_job():
    found = read_events(LINES)
    at = [(round(w - unix_time("2026-12-01T22:01:49"), 3), j) for w, j in found["epilog"]]
    assert at == [(0.650, 4), (2.391, 2), (2.392, 2), (2.394, 21)]
    assert [j for _, j in found["end"]] == [4, 2]


def test_the_kept_lines_include_every_epilog_end():
    kept = [line for line in LINES if TIMING_LINES.search(line)]
    assert [line for line in LINES if "epilog_complete" in line] == [
        line for line in kept if "epilog_complete" in line
    ]
