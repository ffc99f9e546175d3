#!/usr/bin/env bash
# fio through a Themis mount against the same tmpfs natively, measured in the same run.
#
#   bench/themis_fio.sh [--size 256m] [--jobs 4] [--rounds 2]
#
# Needs root, fio and FUSE. Three workloads (psync, buffered): sequential write and read of
# 1 MiB blocks by --jobs processes, and random 4 KiB reads by one process. Each runs on a fresh
# tmpfs natively and through `themis mount` over another tmpfs (size-fair, lottery: the
# defaults), alternating --rounds times; the medians are printed with the ratio mount/native
# and a RESULT line. PYTHON overrides the interpreter. Spread on a shared 2-core VM is large
# (../shared/notes/fuse-on-this-machine.md): compare ratios within one run.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
[[ -x $PY ]] || PY=$(command -v python3)
SIZE=256m
JOBS=4
ROUNDS=2
while (($#)); do
    case $1 in
        --size) SIZE=$2; shift 2 ;;
        --jobs) JOBS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        *) echo "themis_fio: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [[ $(id -u) != 0 ]] || ! command -v fio >/dev/null || [[ ! -e /dev/fuse ]]; then
    echo "themis_fio: needs root, fio and /dev/fuse"
    echo "RESULT skipped=1"
    exit 0
fi

# shellcheck source=bench/_scratch.sh
source "$REPO/bench/_scratch.sh"
scratch_mounts themis-fio 4g
PYTHONPATH=$REPO "$PY" -m themis.cli mount "$work/backing" "$work/mnt" --log-file "$work/log"
daemon=$(grep -o 'themis\[[0-9]*\]' "$work/log" | head -n 1 | tr -dc 0-9)

fio_mibs() {  # fio_mibs DIR NAME RW BS JOBS -> MiB/s (read+write)
    local out
    out=$(fio --name="$2" --directory="$1" --rw="$3" --bs="$4" --numjobs="$5" --size="$SIZE" \
        --ioengine=psync --group_reporting --output-format=json 2>/dev/null)
    printf '%s' "$out" | "$PY" -c '
import json, sys
text = sys.stdin.read()
job = json.loads(text[text.index("{"):])["jobs"][0]
print("%.1f" % ((job["read"]["bw_bytes"] + job["write"]["bw_bytes"]) / 2**20))'
}

declare -A got
for ((r = 1; r <= ROUNDS; r++)); do
    for where in native mnt; do
        dir=$work/$where/r$r
        mkdir -p "$dir"
        got[$where,write]+=" $(fio_mibs "$dir" seq write 1m "$JOBS")"
        got[$where,read]+=" $(fio_mibs "$dir" seq read 1m "$JOBS")"
        got[$where,randread]+=" $(fio_mibs "$dir" seq randread 4k 1)"
        rm -rf "$dir"
    done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
result="RESULT"
printf '%-10s %12s %12s %8s\n' workload native_MiBps themis_MiBps ratio
for w in write read randread; do
    n=$(median <<<"${got[native,$w]}")
    m=$(median <<<"${got[mnt,$w]}")
    ratio=$(echo "scale=3; $m / $n" | bc)
    printf '%-10s %12s %12s %8s   (rounds: native%s; themis%s)\n' "$w" "$n" "$m" "$ratio" \
        "${got[native,$w]}" "${got[mnt,$w]}"
    result+=" ${w}_native_MiBps=$n ${w}_themis_MiBps=$m ${w}_ratio=$ratio"
done
echo "$result jobs=$JOBS size=$SIZE rounds=$ROUNDS"
