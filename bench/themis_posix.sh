#!/usr/bin/env bash
# POSIX conformance of a Themis mount: pjdfstest on the backing file system and on Themis.
#
#   PJDFSTEST=/path/to/pjdfstest bench/themis_posix.sh [TEST_SUBDIR...]
#
# PJDFSTEST names a built pjdfstest tree (its `pjdfstest` binary and `tests/` folder; build it
# outside this project: autoreconf -ifs && ./configure && make pjdfstest). Its code is never
# part of this project. Needs root, prove (perl) and FUSE. Runs `prove -r` with the working
# directory on a fresh tmpfs (the backing file system), then on a Themis mount over another
# fresh tmpfs, prints both summaries and the files that fail only through Themis, and ends
# with a RESULT line. TEST_SUBDIRs (e.g. `chmod rename`) limit the run; the full suite takes
# about 3-4 minutes per target on a 2-core VM. PYTHON overrides the interpreter.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
[[ -x $PY ]] || PY=$(command -v python3)

if [[ -z ${PJDFSTEST:-} || ! -x ${PJDFSTEST:-}/pjdfstest || ! -d ${PJDFSTEST:-}/tests ]]; then
    echo "themis_posix: set PJDFSTEST to a built pjdfstest tree (with pjdfstest and tests/)"
    echo "RESULT skipped=1"
    exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v prove >/dev/null || [[ ! -e /dev/fuse ]]; then
    echo "themis_posix: needs root, prove and /dev/fuse"
    echo "RESULT skipped=1"
    exit 0
fi
tests=("$@")
[[ ${#tests[@]} -gt 0 ]] || tests=(.)
targets=()
for t in "${tests[@]}"; do targets+=("$PJDFSTEST/tests/$t"); done

# shellcheck source=bench/_scratch.sh
source "$REPO/bench/_scratch.sh"
scratch_mounts themis-posix 2g
chmod 755 "$work/native" "$work/backing"

run() {  # run NAME DIR: prove in DIR, output into $work/NAME.out; prints the wall time
    local start end
    start=$(date +%s.%N)
    (cd "$2" && prove -r "${targets[@]}" >"$work/$1.out" 2>&1) || true
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}

failed_files() {  # the test files prove's summary lists with failed tests, and how many
    awk '/^Test Summary Report/{s=1} s && /\.t +\(Wstat/ {
        f=$1; sub(".*/tests/", "", f); n=$0; sub(".*Failed: ", "", n); sub(")", "", n)
        if (n > 0 || $0 !~ /Wstat: 0 /) print f, n}' "$1"
}

todo_passed() {  # files whose expected failures (TODO tests) passed, with the test numbers
    awk '/^Test Summary Report/{s=1} s && /\.t +\(Wstat/ {f=$1; sub(".*/tests/", "", f)}
         s && /TODO passed:/ {sub(".*TODO passed: *", ""); print f ": " $0}' "$1"
}

summary() {  # summary NAME
    local out=$work/$1.out
    grep -E '^(Files=|Result:)' "$out" | tr '\n' ' '
    echo
}

t_native=$(run native "$work/native")
PYTHONPATH=$REPO "$PY" -m themis.cli mount "$work/backing" "$work/mnt" \
    --log-file "$work/themis.log" --log-level warning
daemon=$(grep -o 'themis\[[0-9]*\]' "$work/themis.log" | head -n 1 | tr -dc 0-9 || true)
if [[ -z $daemon ]]; then  # the log is at warning level: find the daemon by its mount point
    daemon=$(pgrep -f "themis.cli mount $work/backing $work/mnt" | head -n 1)
fi
t_mount=$(run themis "$work/mnt")

echo "== pjdfstest on the backing file system (tmpfs), ${t_native%.*} s"
summary native
failed_files "$work/native.out" | sed 's/^/  failed: /'
todo_passed "$work/native.out" | sed 's/^/  TODO (expected failure) passed: /'
echo "== pjdfstest through Themis (over tmpfs), ${t_mount%.*} s"
summary themis
failed_files "$work/themis.out" | sed 's/^/  failed: /'
todo_passed "$work/themis.out" | sed 's/^/  TODO (expected failure) passed: /'
extra=$(comm -13 <(failed_files "$work/native.out" | cut -d' ' -f1 | sort) \
                 <(failed_files "$work/themis.out" | cut -d' ' -f1 | sort))
echo "== files failing only through Themis: ${extra:-none}"
if grep -q Traceback "$work/themis.log"; then
    echo "== the daemon logged tracebacks:"
    grep -B2 -A8 Traceback "$work/themis.log" | head -n 40
fi
count() { failed_files "$1" | awk '{f++; t+=$2} END {printf "%d %d\n", f, t}'; }
read -r nf nt < <(count "$work/native.out")
read -r mf mt < <(count "$work/themis.out")
tests_total=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$work/themis.out")
echo "RESULT backing_failed_files=$nf backing_failed_tests=$nt themis_failed_files=$mf" \
     "themis_failed_tests=$mt extra_failed_files=$(wc -w <<<"$extra")" \
     "tests=${tests_total:-0} backing_s=${t_native%.*} themis_s=${t_mount%.*}"
