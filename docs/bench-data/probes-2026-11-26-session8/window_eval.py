import sys, json, numpy as np
from pathlib import Path
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from mirage.backtest import labels as lb
from mirage.backtest.origin import plan_from_json, origin_path
from mirage.eval.offline import oracle_gaps
def mean(a): return float(np.mean(np.abs(a))) / 3600
for d in sys.argv[1:]:
    out = Path(d)
    plan = plan_from_json(json.loads((out / 'plan.json').read_text()))
    tot = {}; wins = {'average': 0, 'reactive': 0}; n = 0; rows = []
    for w in plan.origins:
        p = origin_path(out, w)
        if not p.exists(): continue
        res = json.loads(p.read_text())
        if 'skipped' in res: continue
        test = lb.load_week(out, w)
        g = {'reactive': test.ep_end_gap, 'average': lb.per_chain(test, 'average_gap'), 'rolling': np.asarray(res['gaps'][res['chosen']]), 'oracle': oracle_gaps(test)}
        for k, v in g.items(): tot.setdefault((w.role, k), []).append(v)
        if w.role == 'dev':
            n += 1
            for b in wins:
                wins[b] += mean(g['rolling']) < mean(g[b])
        rows.append(f"{w.label} {w.role} rolling {mean(g['rolling']):.2f} average {mean(g['average']):.2f} ({res['chosen']}, train {res['train_chains']})")
    print(d); print('\n'.join(rows))
    for role in ('dev', 'test'):
        t = {k: round(mean(np.concatenate(v)), 2) for (r, k), v in tot.items() if r == role}
        if t: print(role, t)
    print('dev weeks rolling beats:', wins, 'of', n)
