"""Summarise the declared replays (unseen_runs/LOG.RULE.txt): mean, median, p90 (simulated /
recorded), KS, Spearman and the 1.5x verdict. Usage: summarise_unseen.py DIR"""
import re
import sys
from pathlib import Path

rows = {}
for f in sorted(Path(sys.argv[1]).glob("*.*.txt")):
    if f.name == "times.txt":
        continue
    log, rule = f.stem.rsplit(".", 1)
    t = f.read_text()
    cmp = t.split("jobs with a recorded start", 1)
    if len(cmp) < 2:
        rows.setdefault(log, {})[rule] = "no comparison: " + t.strip().splitlines()[-1][:100]
        continue
    c = cmp[1]

    def two(name):
        m = re.search(rf"│ {name}\s+│\s+([\d.]+) h │\s+([\d.]+) h", c)
        return float(m.group(1)), float(m.group(2))

    (ms, mr), (ds, dr), (ps, pr) = two("mean wait"), two("median wait"), two("p90 wait")
    ks = float(re.search(r"KS distance[^│]*│\s+([\d.]+)", c).group(1))
    sp = float(re.search(r"Spearman\)\s+│\s+(-?[\d.]+)", c).group(1))
    r = ms / mr if mr else float("inf")
    ok = 1 / 1.5 <= r <= 1.5
    rows.setdefault(log, {})[rule] = (
        f"mean {ms:.2f} / {mr:.2f} h (x{r:.2f}, {'met' if ok else 'missed'}), median {ds:.2f} / "
        f"{dr:.2f} h, p90 {ps:.2f} / {pr:.2f} h, KS {ks:.3f}, Spearman {sp:.3f}"
    )
rules = sorted({r for by in rows.values() for r in by}, key=lambda r: (r != "NEW", r))
hits = dict.fromkeys(rules, 0)
for log, by in rows.items():
    print(log)
    for rule in rules:
        print(f"  {rule}: {by.get(rule)}")
        hits[rule] += "met)" in str(by.get(rule))
print(f"RESULT unseen_real logs={len(rows)} "
      + " ".join(f"within_1.5x_{r.lower()}={hits[r]}" for r in rules))
