"""The declared measures from two bench/unseen_sites.py outputs: sites within 1.5x, and over
the sites drawn with bf_max_job_test=50, mean |ln(mean ratio)| and the inferred depths.
    python compare.py BEFORE.txt AFTER.txt"""
import math
import re
import sys


def parse(path):
    sites, depth = {}, None
    for line in open(path):
        m = re.search(r"bf_max_job_test=(\d+)", line) if line.startswith("note: from the recorded start order") else None
        if m:
            depth = int(m.group(1))
        elif line.startswith("note: from the recorded start order"):
            depth = None
        m = re.match(r"site (\d+): .*bf_max_job_test=(\d+).*\(x([0-9.]+)", line)
        if m:
            sites[int(m.group(1))] = (int(m.group(2)), float(m.group(3)), depth)
            depth = None
    return sites


for path in sys.argv[1:]:
    s = parse(path)
    d50 = {k: v for k, v in s.items() if v[0] == 50}
    within = sum(1 / 1.5 <= v[1] <= 1.5 for v in s.values())
    mlog = sum(abs(math.log(v[1])) for v in d50.values()) / max(1, len(d50))
    print(f"{path}: within 1.5x {within}/{len(s)}; depth-50 sites {len(d50)}: mean |ln ratio| {mlog:.3f}; "
          + " ".join(f"{k}:x{v[1]:.2f}/d{v[2]}" for k, v in sorted(d50.items())))
