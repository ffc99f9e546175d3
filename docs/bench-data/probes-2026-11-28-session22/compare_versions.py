"""bench/unseen_sites.py outputs of several versions on the same seeds: per version, the
means within 1.5x, and the mean KS, Spearman and |ln mean ratio| over all sites.
    python compare_versions.py NAME=FILE[,FILE] ..."""
import math
import re
import sys

for arg in sys.argv[1:]:
    name, files = arg.split("=", 1)
    sites = {}
    for path in files.split(","):
        for line in open(path):
            m = re.match(r"site (\d+): .*\(x([0-9.]+)[,)].*KS ([0-9.]+), Spearman ([0-9.-]+)", line)
            if m:
                sites[int(m.group(1))] = tuple(float(m.group(i)) for i in (2, 3, 4))
    n = len(sites)
    within = sum(1 / 1.5 <= r <= 1.5 for r, _, _ in sites.values())
    ks = sum(k for _, k, _ in sites.values()) / n
    sp = sum(s for _, _, s in sites.values()) / n
    ln = sum(abs(math.log(r)) for r, _, _ in sites.values()) / n
    worst = sorted(sites.items(), key=lambda kv: -abs(math.log(kv[1][0])))[:3]
    print(f"{name}: {n} sites, within 1.5x {within}, mean KS {ks:.3f}, Spearman {sp:.3f}, "
          f"|ln ratio| {ln:.3f}; furthest " + " ".join(f"{k}:x{v[0]:.2f}" for k, v in worst))
