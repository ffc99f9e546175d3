#!/bin/sh
# Session 36's held-out known-truth runs: old (b6a315b, worktree /tmp/wt36) and new (this
# tree) at once, one per core. The logs were made once, by the new tree:
#   known_truth.py outages 11,...,18 --make /tmp/p36/ho (and limits 11-18, own 15-20)
K=/work/main/docs/bench-data/probes-2026-12-02-session35/known_truth.py
OUT=/work/main/docs/bench-data/probes-2026-12-02-session36/limits_check_runs
run() {  # tree, label
  cd "$1" || exit 1
  for spec in "outages 11,12,13,14,15,16,17,18" "limits 11,12,13,14,15,16,17,18" "own 15,16,17,18,19,20"; do
    # shellcheck disable=SC2086
    PYTHONPATH=. /work/main/.venv/bin/python "$K" $spec --load /tmp/p36/ho
  done > "$OUT/known_$2.txt" 2>&1
}
run /tmp/wt36 old &
run /work/main new &
wait
