import sys, json, numpy as np
from pathlib import Path
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from mirage.backtest import labels as lb
from mirage.backtest.origin import plan_from_json
from mirage.backtest.report import collect
out = Path(sys.argv[1])
plan = plan_from_json(json.loads((out/'plan.json').read_text()))
weeks = collect(out, plan)
prev = None
rows = []
for w in weeks:
    g = w['gaps']
    test = lb.load_week(out, next(x for x in plan.origins if x.label == w['week']))
    known = lb.per_chain(test, 'known')
    rows.append((w, known))
def mean(a): return float(np.mean(np.abs(a)))/3600
print("week role | reactive average rolling | fb_all fb_known | choice (fb_all: last week's winner over all its chains; fb_known: over those whose labels were known at the origin)")
tot = {'dev':{}, 'test':{}}
wins = {'rolling':0, 'fb_all':0, 'fb_known':0}
ndev = 0
for k,(w,known) in enumerate(rows):
    g = w['gaps']
    choice_all = choice_known = 'rolling'
    n_known = 0
    if k > 0:
        pw, pknown = rows[k-1]
        pg = pw['gaps']
        # the origin's start = this week's start; chains of last week known by then
        wk = next(x for x in plan.origins if x.label == w['week'])
        m = pknown <= wk.start
        n_known = f"{int(m.sum())}/{m.size}"
        if mean(pg['average']) < mean(pg['rolling']): choice_all = 'average'
        if m.any() and mean(pg['average'][m]) < mean(pg['rolling'][m]): choice_known = 'average'
    fa = g[choice_all]; fk = g[choice_known]
    r = w['role']
    for name, arr in (('reactive',g['reactive']),('average',g['average']),('rolling',g['rolling']),('fb_all',fa),('fb_known',fk),('oracle',g['oracle'])):
        tot[r].setdefault(name, []).append(arr)
    if r == 'dev':
        ndev += 1
        for name, arr in (('rolling',g['rolling']),('fb_all',fa),('fb_known',fk)):
            if mean(arr) < mean(g['average']) : wins[name]+=1
    print(w['week'], r, f"| {mean(g['reactive']):.2f} {mean(g['average']):.2f} {mean(g['rolling']):.2f} | {mean(fa):.2f} {mean(fk):.2f} | {choice_all}/{choice_known} last week's chains known at the origin {n_known}")
for r in tot:
    print(r, {n: round(mean(np.concatenate(v)),2) for n,v in tot[r].items()})
print("dev weeks beating average:", wins, "of", ndev)
