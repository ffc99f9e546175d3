#!/usr/bin/env bash
# The main job on the embedded defaults: replay the embedded LS6 slice through the Slurm
# simulator, compare Mirage's default model with the baselines on it, and run the Themis
# I/O-sharing microbenchmarks. Everything lands in out/.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p out
PATH="$PWD/.venv/bin:$PATH"

echo "== 1/3  Slurm simulator: replay of the embedded LS6 A100 slice"
hpcsim replay --out out/schedule.csv --plot out/replay.png

echo "== 2/3  Mirage: the shipped LS6 model against the baselines (embedded slice, 48 chains)"
TRACE=$(python -c "from sim.data import default_trace_path; print(default_trace_path())")
mirage eval --trace "$TRACE" --train-range 2023-01-03:2023-01-14 \
    --test-range 2023-01-16:2023-01-28 --split test \
    --agents reactive,average,oracle,default --episodes 48 --jobs 2 --out out/mirage

echo "== 3/3  Themis: I/O-sharing microbenchmarks (simulated)"
themis sim --out out/themis

echo
echo "Outputs in out/: schedule.csv, replay.png, mirage/, themis/"
