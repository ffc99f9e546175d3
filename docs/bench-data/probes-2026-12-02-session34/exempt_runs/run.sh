#!/bin/bash
# The declared held-out check (exempt_declared.txt): old code (main) then new (wt34), each batch.
OUT=/work/wt34/docs/bench-data/probes-2026-12-02-session34/exempt_runs
PY=/work/main/.venv/bin/python
for batch in "grid:--sites 16 --first 720" "offgrid:--sites 32 --first 736 --off-grid"; do
  name=${batch%%:*}; args=${batch#*:}
  for code in old:/work/main new:/work/wt34; do
    tag=${code%%:*}; dir=${code#*:}
    s=$(date -u +%T)
    (cd $dir && nice -n 5 $PY bench/unseen_sites.py $args > $OUT/${name}_${tag}.txt 2>&1)
    echo "$name $tag rc=$? $s-$(date -u +%T)" >> $OUT/times.txt
  done
done
