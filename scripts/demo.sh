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

if python -c "import mirage.agents as a; a.default_model_path()" 2>/dev/null; then
    echo "== 2/3  Mirage: default model against the baselines (embedded trace)"
    mirage eval --demo --out out/mirage
else
    echo "== 2/3  Mirage: no default model shipped yet; skipped"
fi

echo "== 3/3  Themis: I/O-sharing microbenchmarks (simulated)"
themis sim --out out/themis

echo
echo "Outputs in out/: schedule.csv, replay.png, mirage/, themis/"
