"""Session 33's Mirage study (LS6's profile in the replay of session 32's code) against
session 27's (the same profile in the replay of then): mean abs gap per agent, validation
and March, and the share of reactive's gap to the oracle each closes. Reused for later
studies: ``study_compare.py NEW OLD [OLD_LABEL NEW_LABEL]`` (session 35 passes its own
labels; the defaults are session 27's and 33's)."""
import json
import re
import sys
from pathlib import Path

import numpy as np

NEW, OLD = Path(sys.argv[1]), Path(sys.argv[2])
OLD_NAME, NEW_NAME = sys.argv[3:5] if len(sys.argv) > 4 else ("session 27", "session 33")
AGENTS = ["reactive", "average", "start-estimate", "oracle", "dqn", "moe-dqn", "pg",
          "transformer-pg", "gap-regressor"]


def rows(folder: Path, split: str) -> dict[str, list[float]]:
    """agent (or agent-sN) -> abs gaps, level 'all'."""
    s = json.load(open(folder / split / "summary.json"))["summary"]
    out: dict[str, list[float]] = {}
    for r in s:
        if r["level"] != "all":
            continue
        agent = re.sub(r"-s\d+$", "", r["agent"])
        out.setdefault(agent, []).append(r["abs_gap_hours_mean"])
    return out


def val(folder: Path) -> dict[str, str]:
    out = {}
    for line in open(folder / "README.md"):
        if line.startswith("## Validation"):
            on = True
        if line.startswith("### load: low"):
            break
        p = [c.strip() for c in line.split("|")]
        if len(p) > 3 and p[1] in AGENTS:
            out[p[1]] = p[3]
    return out


def share(agent: float, reactive: float, oracle: float) -> str:
    return f"{(reactive - agent) / (reactive - oracle):.0%}" if reactive != oracle else "-"


for name, folder in ((OLD_NAME, OLD), (NEW_NAME, NEW)):
    v = val(folder)
    print(f"{name}: validation " + ", ".join(f"{a} {v[a]}" for a in AGENTS if a in v))
for split in ("test-1node", "test-8node"):
    o, n = rows(OLD, split), rows(NEW, split)
    closed = f"{OLD_NAME.split()[-1]} -> {NEW_NAME.split()[-1]}"
    print(f"\n{split}: agent | {OLD_NAME} | {NEW_NAME} | share of reactive's gap closed {closed}")
    for a in AGENTS:
        vo, vn = o.get(a), n.get(a)
        fo = f"{np.mean(vo):.2f}" + (f" ± {np.std(vo, ddof=1):.2f}" if vo and len(vo) > 1 else "") if vo else "-"
        fn = f"{np.mean(vn):.2f}" + (f" ± {np.std(vn, ddof=1):.2f}" if vn and len(vn) > 1 else "") if vn else "-"
        so = share(np.mean(vo), o["reactive"][0], o["oracle"][0]) if vo else "-"
        sn = share(np.mean(vn), n["reactive"][0], n["oracle"][0]) if vn else "-"
        print(f"| {a} | {fo} | {fn} | {so} -> {sn} |")
    for e in ("dqn-ens", "moe-dqn-ens", "pg-ens", "transformer-pg-ens", "gap-regressor-ens"):
        print(f"| {e} | {o[e][0]:.2f} | {n[e][0]:.2f} | |")
