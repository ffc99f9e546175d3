#!/usr/bin/env bash
# A private Redis for Themis' cluster mode, on loopback, for tests and benchmarks.
#
#   scripts/redis-server.sh start|stop|status|url [--dir DIR] [--port N] [--password-file F]
#
# Everything lives in one folder (default ${THEMIS_REDIS_DIR:-/tmp/themis-redis}): redis.conf,
# the pid file and the log. Port: --port or THEMIS_REDIS_PORT (default 16379). It listens on
# 127.0.0.1 only, keeps nothing on disk (the reports expire within seconds anyway) and leaves a
# system Redis on the same machine alone. With --password-file (or THEMIS_REDIS_PASSWORD_FILE)
# it wants the password on the file's first line (the file Themis reads as
# cluster.password_file), so that users cannot forge usage reports.
#
#   start   start it unless it runs; wait until it answers PING
#   stop    stop it (SHUTDOWN NOSAVE); exits 0 if already stopped
#   status  exit 0 if it answers, 3 if not
#   url     print the URL for `themis mount --cluster` (database 0)
set -euo pipefail

usage() {
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-2}"
}

die() {
    echo "redis-server.sh: $*" >&2
    exit 1
}

cmd=${1:-}
[[ -n $cmd ]] || usage 2
shift
DIR=${THEMIS_REDIS_DIR:-/tmp/themis-redis}
PORT=${THEMIS_REDIS_PORT:-16379}
PASSFILE=${THEMIS_REDIS_PASSWORD_FILE:-}
while (($#)); do
    case $1 in
        --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
        --dir=*) DIR=${1#*=}; shift ;;
        --port) PORT=${2:?--port needs a value}; shift 2 ;;
        --port=*) PORT=${1#*=}; shift ;;
        --password-file) PASSFILE=${2:?--password-file needs a value}; shift 2 ;;
        --password-file=*) PASSFILE=${1#*=}; shift ;;
        -h|--help) usage 0 ;;
        *) echo "redis-server.sh: unknown argument: $1" >&2; usage 2 ;;
    esac
done
[[ $PORT =~ ^[1-9][0-9]*$ && $PORT -le 65535 ]] || die "--port must be 1..65535, got '$PORT'"

if [[ -n $PASSFILE ]]; then
    [[ -f $PASSFILE && -r $PASSFILE ]] || die "--password-file: cannot read '$PASSFILE'"
    IFS= read -r REDISCLI_AUTH <"$PASSFILE" || true
    [[ -n $REDISCLI_AUTH ]] || die "--password-file: '$PASSFILE' is empty"
    export REDISCLI_AUTH # redis-cli takes it from here: never on a command line
fi

ping() { redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG; }

case $cmd in
    start)
        command -v redis-server >/dev/null || die "redis-server not found (apt-get install redis-server)"
        if ping; then echo "redis-server.sh: already running on 127.0.0.1:$PORT"; exit 0; fi
        mkdir -p "$DIR"
        DIR=$(cd "$DIR" && pwd)
        (umask 077 && : >"$DIR/redis.conf") # it may hold the password
        cat > "$DIR/redis.conf" <<CONF
bind 127.0.0.1
protected-mode yes
port $PORT
daemonize yes
pidfile $DIR/redis.pid
logfile $DIR/redis.log
dir $DIR
save ""
appendonly no
CONF
        if [[ -n $PASSFILE ]]; then
            pass=${REDISCLI_AUTH//\\/\\\\} # redis.conf's quoting: \\ and \"
            printf 'requirepass "%s"\n' "${pass//\"/\\\"}" >>"$DIR/redis.conf"
        fi
        redis-server "$DIR/redis.conf"
        for _ in $(seq 100); do ping && { echo "redis-server.sh: up on 127.0.0.1:$PORT"; exit 0; }; sleep 0.05; done
        die "no answer on 127.0.0.1:$PORT; see $DIR/redis.log"
        ;;
    stop)
        ping || { echo "redis-server.sh: not running"; exit 0; }
        redis-cli -h 127.0.0.1 -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
        for _ in $(seq 100); do ping || exit 0; sleep 0.05; done
        die "still answering on 127.0.0.1:$PORT"
        ;;
    status) if ping; then echo "running on 127.0.0.1:$PORT"; else echo "not running"; exit 3; fi ;;
    url) echo "redis://127.0.0.1:$PORT/0" ;;
    *) echo "redis-server.sh: unknown command: $cmd" >&2; usage 2 ;;
esac
