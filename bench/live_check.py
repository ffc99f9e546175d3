"""Mirage on real Slurm at its own time scale (issue 26): ``mirage live-check`` on a slice of
LS6's log, compressed 240 times, with the shipped model, ``reactive`` and ``average``.

    .venv/bin/python bench/live_check.py [--start 2023-03-06] [--hours 96] [--chains 6]

Declared before the run: the slice is 2023-03-06 .. 03-10 of LS6's A100 log, in March, the
test month, which has been looked at many times; the shipped model was chosen on November to
February. About an hour of wall time. Ends with ``mirage live-check``'s RESULT line.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, without an install

from mirage.livecheck import main  # noqa: E402

TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "ls6-a100.log"
DEFAULTS = ["--start", "2023-03-06", "--hours", "96", "--k", "240", "--chains", "6"]

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        args = [str(TRACE), *DEFAULTS, *args]
    raise SystemExit(main(args))
