"""Session 35 probe (session 34's exempt_users_seen.py, run again): the flag-free replay
(`hpcsim replay LOG --no-profile`) of every seen real log at hand, with session 34's code
(users past a wall exempt) and session 35's (held to their own recorded maxima; users raised
on their own in limit steps). Prints each log's per-user note and its mean simulated /
recorded wait both ways. All these logs are seen.

    python exempt_users_seen.py BEFORE_DIR AFTER_DIR LOG...
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PY = "/work/main/.venv/bin/python"


def replay(code: str, log: str) -> tuple[str, float | None, float | None]:
    out = subprocess.run(
        ["nice", "-n", "19", PY, "-m", "sim.cli", "replay", log, "--no-progress",
         "--no-profile", "--no-cache"],
        cwd=code, capture_output=True, text=True, check=False,
    )  # fmt: skip
    text = out.stdout + out.stderr
    note = next((ln for ln in text.splitlines() if "per-user limits" in ln), "no limits")
    for line in text.splitlines():
        hours = re.findall(r"([\d.]+) h\b", line)
        if re.match(r"\W*mean wait\s", line) and len(hours) == 2:
            return note, float(hours[0]), float(hours[1])
    return note, None, None


def main() -> int:
    before, after, *logs = sys.argv[1:]
    for log in (str(Path(p).absolute()) for p in logs):
        name = Path(log).name
        nb, sb, rec = replay(before, log)
        na, sa, _ = replay(after, log)
        if rec is None or sb is None or sa is None:
            print(f"{name:42s} no comparison")
            continue
        print(
            f"{name:42s} recorded {rec:7.2f} h  before {sb:8.2f} h (x{sb / rec:6.2f})  "
            f"after {sa:8.2f} h (x{sa / rec:6.2f})"
        )
        if nb != na:
            print(
                f"    before: {nb.removeprefix('note: ')}\n    after:  {na.removeprefix('note: ')}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
