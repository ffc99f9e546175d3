#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian 12 machine: system packages (Slurm, munge, FUSE)
# and a virtual environment in .venv with the project installed in editable mode.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS=(slurm-wlm munge slurmdbd mariadb-server fuse3 libfuse3-dev pkg-config redis-server fio prometheus)
missing=()
for p in "${APT_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]]; then SUDO=""; else SUDO="sudo"; fi
    echo "setup: installing system packages: ${missing[*]}"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
    echo "setup: creating .venv"
    "$PY" -m venv .venv
fi
# every compiled source (an edited .c or .h rebuilds the extensions)
stamp=.venv/.installed-$(cat pyproject.toml $(git ls-files -- "*.c" "*.h" 2>/dev/null || find hpcbase sim mirage themis -name "*.[ch]" | sort) | sha1sum | cut -c1-12)
if [[ ! -f $stamp ]]; then
    echo "setup: installing Python packages into .venv"
    # The CPU build of torch first, so that the range in pyproject.toml is already met
    # (an unpinned torch would pull a multi-GB CUDA build).
    .venv/bin/pip install -q --disable-pip-version-check torch==2.13.0 2>&1 | grep -v '^WARNING: Location' || true
    .venv/bin/pip install -q --disable-pip-version-check -e '.[fuse,cluster,parquet,dev]' 2>&1 | grep -v '^WARNING: Location' || true
    .venv/bin/python -c "import hpcbase, sim, mirage, themis, torch, stable_baselines3, pyfuse3, redis" \
        || { echo "setup: the Python install failed" >&2; exit 1; }
    rm -f .venv/.installed-*
    touch "$stamp"
fi
