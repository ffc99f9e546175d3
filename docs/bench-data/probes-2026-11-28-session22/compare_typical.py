"""Two bench/unseen_sites.py outputs side by side, site by site: the mean ratio and Spearman
of each, and the priority the second took where the order showed no depth.
    python compare_typical.py BEFORE.txt AFTER.txt"""
import re
import sys


def parse(path):
    sites, note = {}, ""
    for line in open(path):
        if line.startswith("note: from the recorded start order"):
            note = line
        m = re.match(r"site (\d+): .*\(x([0-9.]+)[,)].*KS ([0-9.]+), Spearman ([0-9.-]+)", line)
        if m:
            sites[int(m.group(1))] = (float(m.group(2)), float(m.group(3)), float(m.group(4)), note)
            note = ""
    return sites


a, b = parse(sys.argv[1]), parse(sys.argv[2])
changed = []
for k in sorted(a):
    pa, pb = a[k], b.get(k)
    if pb is None:
        continue
    m = re.search(r"; priority (\S+):", pb[3])
    if m:
        changed.append(k)
        print(f"site {k}: x{pa[0]:.2f} -> x{pb[0]:.2f}, KS {pa[1]:.3f} -> {pb[1]:.3f}, Spearman {pa[2]:.3f} -> {pb[2]:.3f} ({m.group(1)})")
within = [sum(1 / 1.5 <= s[0] <= 1.5 for s in x.values()) for x in (a, b)]
print(f"sites {len(a)}; within 1.5x {within[0]} -> {within[1]}; priority taken where no depth: {len(changed)}")
if changed:
    for i, name in ((1, "KS"), (2, "Spearman")):
        print(f"  over those: mean {name} {sum(a[k][i] for k in changed) / len(changed):.3f} -> {sum(b[k][i] for k in changed) / len(changed):.3f}")
