#!/usr/bin/env bash
# The whole test suite (`make test`) in two pytest processes at once: the tests on real
# Slurm, which mostly wait on Slurm's clock (chains of one-minute jobs, a time-compressed
# trace), beside all the others, which mostly use the CPU. The Slurm tests' output is
# printed when both are done; the exit status fails if either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
log=$(mktemp "${TMPDIR:-/tmp}/mirage-test-slurm.XXXXXX")
start=$(date +%s)
echo "the tests on real Slurm run beside these; their output follows at the end ($log)"
"$PY" -m pytest -q -ra --durations=15 -m slurm >"$log" 2>&1 &
slurm_pid=$!
trap 'kill "$slurm_pid" 2>/dev/null' INT TERM
"$PY" -m pytest -q -ra --durations=15 -m "not slurm"
rest=$?
wait "$slurm_pid"
slurm=$?
echo "== the tests on real Slurm (run beside the others above)"
cat "$log"
echo "== make test: $(($(date +%s) - start)) s; exit status $rest (the others), $slurm (real Slurm)"
[[ $rest -eq 0 && $slurm -eq 0 ]] && rm -f "$log"
