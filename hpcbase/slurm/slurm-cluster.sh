#!/usr/bin/env bash
# A Slurm cluster on loopback (one node, or several on this machine), for tests and benchmarks.
#
#   scripts/slurm-cluster.sh start|stop|status|env [--dir DIR] [--cpus N] [--nodes N]
#                            [--conf-extra FILE] [--accounting]
#
# Everything lives in one folder (default ${MIRAGE_SLURM_DIR:-/tmp/mirage-slurm}): slurm.conf,
# its own munge key, socket and munged, spool, state, logs and pid files. Nothing under /etc or
# /run is touched, so a system Slurm or munge on the same machine is left alone.
#
# Ports: MIRAGE_SLURMCTLD_PORT (default 16817) and MIRAGE_SLURMD_PORT (default 16818).
# Node name: MIRAGE_SLURM_NODE (default: `hostname -s`). Cgroups: MIRAGE_SLURM_CGROUPS (below).
# --nodes N (default 1): N nodes of --cpus CPUs each on this one machine, one slurmd each
# (Debian's slurmd runs several: `slurmd -N NAME`), named NODE-1 ... NODE-N, listening on
# MIRAGE_SLURMD_PORTS (N comma-separated ports; default: MIRAGE_SLURMD_PORT for the first,
# 16822 and up for the others). Jobs may span them (`sbatch -N 3`); their tasks all run here.
#
#   start   start whatever is not running (munged, slurmctld, slurmd) and wait until the node
#           is idle; "already running" exits 0. With --conf-extra FILE, FILE's lines are
#           appended to the generated slurm.conf (scheduler settings). With --accounting, an
#           accounting database of its own (MariaDB in DIR/db, slurmdbd) holds the cluster,
#           account "mirage" with this user in it, and QOS "normal": slurmctld enforces its
#           limits (AccountingStorageEnforce=associations,limits,qos; set them with sacctmgr).
#           Ports: MIRAGE_SLURMDBD_PORT (16819) and MIRAGE_SLURM_DB_PORT (16820), loopback.
#   stop    cancel this cluster's jobs and stop its daemons (slurmdbd and MariaDB too);
#           exits 0 if already stopped.
#           --only slurmctld|slurmd|munged|slurmdbd stops only that daemon (failure tests).
#   status  show the daemons and the node; exit 0 if all run, 3 if none, 1 if some.
#   env     print `export SLURM_CONF=...` for a shell: eval "$(scripts/slurm-cluster.sh env)"
#   conf    print the path of the generated slurm.conf.
#   render  print the slurm.conf that start would write (nothing is started).
set -euo pipefail

usage() {
    sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-2}"
}

die() {
    echo "slurm-cluster: $*" >&2
    exit 1
}

cmd=${1:-}
[[ -n $cmd ]] || usage 2
shift
DIR=${MIRAGE_SLURM_DIR:-/tmp/mirage-slurm}
CPUS=16
NODES=""
CONF_EXTRA=""
ONLY=""
ACCOUNTING=0
while (($#)); do
    case $1 in
        --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
        --dir=*) DIR=${1#*=}; shift ;;
        --cpus) CPUS=${2:?--cpus needs a value}; shift 2 ;;
        --cpus=*) CPUS=${1#*=}; shift ;;
        --nodes) NODES=${2:?--nodes needs a value}; shift 2 ;;
        --nodes=*) NODES=${1#*=}; shift ;;
        --conf-extra) CONF_EXTRA=${2:?--conf-extra needs a file}; shift 2 ;;
        --conf-extra=*) CONF_EXTRA=${1#*=}; shift ;;
        --only) ONLY=${2:?--only needs a daemon name}; shift 2 ;;
        --only=*) ONLY=${1#*=}; shift ;;
        --accounting) ACCOUNTING=1; shift ;;
        -h|--help) usage 0 ;;
        *) echo "slurm-cluster: unknown argument: $1" >&2; usage 2 ;;
    esac
done
[[ $CPUS =~ ^[1-9][0-9]*$ ]] || die "--cpus must be a positive integer, got '$CPUS'"
[[ -z $NODES || $NODES =~ ^[1-9][0-9]?$ ]] || die "--nodes must be an integer from 1 to 99, got '$NODES'"
[[ -z $ONLY || $ONLY =~ ^(slurmctld|slurmd|munged|slurmdbd)$ ]] \
    || die "--only must be slurmctld, slurmd, munged or slurmdbd, got '$ONLY'"
if [[ -n $CONF_EXTRA ]]; then
    [[ -f $CONF_EXTRA ]] || die "--conf-extra: no such file: $CONF_EXTRA"
    CONF_EXTRA=$(cd "$(dirname "$CONF_EXTRA")" && pwd)/$(basename "$CONF_EXTRA")
fi
[[ $cmd == start ]] && mkdir -p "$DIR"
[[ -d $DIR ]] && DIR=$(cd "$DIR" && pwd)

CTLD_PORT=${MIRAGE_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${MIRAGE_SLURMD_PORT:-16818}
DBD_PORT=${MIRAGE_SLURMDBD_PORT:-16819}
DB_PORT=${MIRAGE_SLURM_DB_PORT:-16820}
NODE=${MIRAGE_SLURM_NODE:-$(hostname -s 2>/dev/null || uname -n | cut -d. -f1)}
CONF=$DIR/slurm.conf
MUNGE_SOCK=$DIR/munge/munge.socket
MUNGE_PID=$DIR/munge/munged.pid
CTLD_PID=$DIR/run/slurmctld.pid
SLURMD_PID=$DIR/run/slurmd.pid
# without --nodes, stop and status take the nodes of the cluster's own slurm.conf
if [[ -z $NODES ]]; then
    NODES=1
    if [[ $cmd == stop || $cmd == status ]] && [[ -f $CONF ]]; then
        n=$(grep -c '^NodeName=' "$CONF" || true)
        ((n > 1)) && NODES=$n
    fi
fi
# the nodes: one slurmd each, with its name, port, pid file and log (one node: NODE itself)
if ((NODES == 1)); then
    NODE_NAMES=("$NODE") SLURMD_PORTS=("$SLURMD_PORT")
    SLURMD_PIDS=("$SLURMD_PID") SLURMD_LOGS=("$DIR/log/slurmd.log")
    NODE_LIST=$NODE
else
    NODE_NAMES=() SLURMD_PIDS=() SLURMD_LOGS=()
    IFS=, read -r -a SLURMD_PORTS <<<"${MIRAGE_SLURMD_PORTS:-}"
    ((${#SLURMD_PORTS[@]} == 0)) || ((${#SLURMD_PORTS[@]} == NODES)) \
        || die "MIRAGE_SLURMD_PORTS names ${#SLURMD_PORTS[@]} ports for $NODES nodes"
    for ((k = 1; k <= NODES; k++)); do
        NODE_NAMES+=("$NODE-$k")
        SLURMD_PIDS+=("$DIR/run/slurmd-$NODE-$k.pid") SLURMD_LOGS+=("$DIR/log/slurmd-$NODE-$k.log")
        # default: MIRAGE_SLURMD_PORT, then 16822 and up (past slurmdbd's and MariaDB's)
        ((${#SLURMD_PORTS[@]} == NODES)) || SLURMD_PORTS+=($((k == 1 ? SLURMD_PORT : 16820 + k)))
    done
    for p in "${SLURMD_PORTS[@]}"; do
        [[ $p =~ ^[1-9][0-9]*$ ]] || die "MIRAGE_SLURMD_PORTS: not a port: '$p'"
    done
    SLURMD_PORT=${SLURMD_PORTS[0]}
    NODE_LIST="$NODE-[1-$NODES]"
fi
DBD_PID=$DIR/run/slurmdbd.pid
DB_PID=$DIR/run/mariadbd.pid
DB_SOCK=$DIR/run/mariadbd.sock
export SLURM_CONF=$CONF

# Unix socket paths are limited to 107 bytes; slurmd's step sockets live in the spool.
((${#DIR} <= 60)) || die "--dir path is too long for Unix sockets (${#DIR} > 60 chars): $DIR"

need_bins() {
    local b missing=()
    for b in munged mungekey slurmctld slurmd sinfo scontrol squeue scancel; do
        command -v "$b" >/dev/null 2>&1 || missing+=("$b")
    done
    if ((ACCOUNTING)); then
        for b in mariadbd mariadb-install-db mariadb slurmdbd sacctmgr; do
            command -v "$b" >/dev/null 2>&1 || missing+=("$b")
        done
    fi
    ((${#missing[@]} == 0)) || die "missing programs: ${missing[*]} (install slurm-wlm, munge, slurmdbd and mariadb-server: scripts/setup.sh)"
}

pid_alive() {  # pid_alive PIDFILE -> 0 if the process named in it runs (and is ours)
    local pid args
    [[ -s $1 ]] || return 1
    pid=$(<"$1")
    [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
    # A stale pid file may name a recycled pid: our daemons all have $DIR in their arguments
    # (slurmdbd, which takes no file argument, in its SLURM_CONF).
    args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $args == *"$DIR/"* ]] && return 0
    [[ $args == slurmdbd* ]] || return 1
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF"
}

port_taken() {  # port_taken PORT -> 0 if something listens on it
    ss -Htln "sport = :$1" 2>/dev/null | grep -q . && return 0
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

check_port() {  # check_port NAME PIDFILE PORT: fail if NAME must start but PORT is taken
    pid_alive "$2" && return 0
    if port_taken "$3"; then
        die "port $3 (for $1) is already in use by another program; pick free ports with MIRAGE_SLURMCTLD_PORT / MIRAGE_SLURMD_PORT"
    fi
}

log_tail() {  # log_tail NAME FILE
    echo "---- last lines of $2 ----" >&2
    tail -n 25 "$2" >&2 2>/dev/null || echo "(no log)" >&2
    echo "----" >&2
}

# Cgroups: with MIRAGE_SLURM_CGROUPS=auto (the default) jobs go into cgroups
# (proctrack/cgroup, task/cgroup, cgroup/v1) when the host mounts cgroup v1 with a writable
# freezer hierarchy, as this project's VMs do; =yes insists, =no never. Slurm 22.05's
# cgroup/v2 plugin needs systemd's D-Bus to create its scope, which containers and bare CI
# machines lack, so a v2-only host gets proctrack/linuxproc and task/none (jobs are then found
# through their environment only).
use_cgroups() {
    case ${MIRAGE_SLURM_CGROUPS:-auto} in
        no) return 1 ;;
        yes) return 0 ;;
    esac
    [[ -d /sys/fs/cgroup/freezer && -w /sys/fs/cgroup/freezer ]] \
        && [[ $(stat -f -c %T /sys/fs/cgroup/freezer 2>/dev/null) == cgroupfs ]]
}
if use_cgroups; then
    PROCTRACK=proctrack/cgroup
    TASKPLUGIN=task/cgroup
else
    PROCTRACK=proctrack/linuxproc
    TASKPLUGIN=task/none
fi

write_cgroup_conf() {  # write_cgroup_conf FILE: cgroup.conf, next to slurm.conf where Slurm looks
    cat >"$1" <<EOF
# Generated by scripts/slurm-cluster.sh: jobs are tracked in cgroups, nothing is constrained.
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainSwapSpace=no
ConstrainDevices=no
EOF
}

accounting_lines() {  # the slurm.conf lines of accounting (none without --accounting)
    if ((ACCOUNTING)); then
        printf '%s\n' "AccountingStorageType=accounting_storage/slurmdbd" \
            "AccountingStorageHost=127.0.0.1" "AccountingStoragePort=$DBD_PORT" \
            "AccountingStoragePass=$MUNGE_SOCK" \
            "AccountingStorageEnforce=associations,limits,qos"
    else
        echo "AccountingStorageType=accounting_storage/none"
    fi
}

node_lines() {  # the NodeName lines: one node, or one line per node with its own port
    if ((NODES == 1)); then
        echo "NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$NODE CPUs=$CPUS State=UNKNOWN"
        return
    fi
    local k
    for k in "${!NODE_NAMES[@]}"; do
        echo "NodeName=${NODE_NAMES[k]} NodeAddr=127.0.0.1 NodeHostname=$NODE Port=${SLURMD_PORTS[k]} CPUs=$CPUS State=UNKNOWN"
    done
}

write_conf() {  # write_conf FILE: the slurm.conf for the current options
    cat >"$1" <<EOF
# Generated by scripts/slurm-cluster.sh; regenerated on every start.
ClusterName=mirage
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$(((NODES == 1)) && echo "$SLURMD_PID" || echo "$DIR/run/slurmd-%n.pid")
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$(((NODES == 1)) && echo "$DIR/log/slurmd.log" || echo "$DIR/log/slurmd-%n.log")
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
# Jobs in cgroups where the host lets us (see use_cgroups).
ProctrackType=$PROCTRACK
TaskPlugin=$TASKPLUGIN
JobAcctGatherType=jobacct_gather/none
$(accounting_lines)
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
SwitchType=switch/none
MpiDefault=none
LaunchParameters=use_interactive_step
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
PriorityType=priority/multifactor
ReturnToService=2
# Keep finished jobs visible to "scontrol show job" for a day.
MinJobAge=86400
MaxJobCount=100000
MessageTimeout=10
SlurmctldTimeout=60
SlurmdTimeout=300
InactiveLimit=0
KillWait=5
Waittime=0
SlurmdParameters=config_overrides
$(node_lines)
PartitionName=debug Nodes=$NODE_LIST Default=YES MaxTime=INFINITE State=UP
EOF
    if [[ -n $CONF_EXTRA ]]; then
        {
            echo "# ---- appended from $CONF_EXTRA ----"
            cat "$CONF_EXTRA"
            echo
        } >>"$1"
    fi
}

start_munged() {
    pid_alive "$MUNGE_PID" && return 0
    mkdir -p "$DIR/munge"
    chmod 755 "$DIR/munge"
    if [[ ! -s $DIR/munge/munge.key ]]; then
        mungekey --create --keyfile="$DIR/munge/munge.key" --force >/dev/null 2>&1 \
            || dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
        chmod 600 "$DIR/munge/munge.key"
    fi
    rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
    # --force: munged refuses some set-ups (e.g. running as root) without it.
    if ! munged --force --socket="$MUNGE_SOCK" --key-file="$DIR/munge/munge.key" \
        --pid-file="$MUNGE_PID" --log-file="$DIR/log/munged.log" \
        --seed-file="$DIR/munge/munged.seed" </dev/null >>"$DIR/log/munged.out" 2>&1; then
        echo "slurm-cluster: munged failed to start" >&2
        log_tail munged "$DIR/log/munged.log"
        tail -n 5 "$DIR/log/munged.out" >&2 || true
        exit 1
    fi
    local i
    for ((i = 0; i < 50; i++)); do
        [[ -S $MUNGE_SOCK ]] && return 0
        sleep 0.1
    done
    echo "slurm-cluster: munged did not create its socket $MUNGE_SOCK" >&2
    log_tail munged "$DIR/log/munged.log"
    exit 1
}

start_daemon() {  # start_daemon NAME PIDFILE PORT LOG ARGS...
    local name=$1 pidf=$2 port=$3 log=$4 i
    shift 4
    pid_alive "$pidf" && return 0
    rm -f "$pidf"
    local rc=0
    "$@" </dev/null >>"$DIR/log/$name.out" 2>&1 || rc=$?
    if ((rc != 0)); then
        echo "slurm-cluster: $name failed to start (exit status $rc): $*" >&2
        tail -n 5 "$DIR/log/$name.out" >&2 || true
        log_tail "$name" "$log"
        exit 1
    fi
    # The daemon forks; its pid file appears once it runs. A pid file naming a dead process
    # means it exited during start-up.
    for ((i = 0; i < 100; i++)); do
        if [[ -s $pidf ]]; then
            sleep 0.3
            pid_alive "$pidf" && return 0
            break
        fi
        sleep 0.1
    done
    echo "slurm-cluster: $name did not stay up (run '$0 stop --dir $DIR' to clean up)" >&2
    tail -n 5 "$DIR/log/$name.out" >&2 || true
    log_tail "$name" "$log"
    exit 1
}

# ---- accounting (--accounting): MariaDB and slurmdbd of this cluster alone ----

db_sql() {  # db_sql SQL: run SQL as the database's root (socket authentication)
    mariadb --no-defaults --socket="$DB_SOCK" -u root -N -e "$1"
}

start_db() {  # MariaDB in $DIR/db on loopback, created on first start; user slurm for slurmdbd
    pid_alive "$DB_PID" && return 0
    if [[ ! -d $DIR/db/mysql ]]; then
        rm -rf "$DIR/db"
        mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$DIR/db" \
            --auth-root-authentication-method=socket --skip-test-db \
            >>"$DIR/log/mariadb-install.out" 2>&1 \
            || { echo "slurm-cluster: mariadb-install-db failed" >&2; tail -n 15 "$DIR/log/mariadb-install.out" >&2; exit 1; }
    fi
    check_port mariadbd "$DB_PID" "$DB_PORT"
    rm -f "$DB_SOCK"
    mariadbd --no-defaults --user="$(id -un)" --datadir="$DIR/db" --socket="$DB_SOCK" \
        --port="$DB_PORT" --bind-address=127.0.0.1 --pid-file="$DB_PID" \
        --log-error="$DIR/log/mariadbd.log" --skip-name-resolve --skip-log-bin \
        --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 \
        --innodb-buffer-pool-dump-at-shutdown=0 --innodb-buffer-pool-load-at-startup=0 \
        </dev/null >>"$DIR/log/mariadbd.out" 2>&1 &
    local i
    for ((i = 0; i < 300; i++)); do
        [[ -S $DB_SOCK ]] && db_sql "SELECT 1" >/dev/null 2>&1 && break
        sleep 0.1
    done
    pid_alive "$DB_PID" || { echo "slurm-cluster: mariadbd did not start" >&2; log_tail mariadbd "$DIR/log/mariadbd.log"; exit 1; }
    # slurmdbd's password: random, made once, readable by this user alone
    if [[ ! -s $DIR/db.pass ]]; then
        (umask 077 && head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$DIR/db.pass")
    fi
    db_sql "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$(<"$DIR/db.pass")';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" \
        || { echo "slurm-cluster: could not create the database user for slurmdbd" >&2; exit 1; }
}

write_dbd_conf() {  # slurmdbd.conf beside slurm.conf (where slurmdbd looks), mode 600
    (umask 077 && cat >"$DIR/slurmdbd.conf" <<EOF
# Generated by scripts/slurm-cluster.sh --accounting; regenerated on every start.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=$(id -un)
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$(<"$DIR/db.pass")
StorageLoc=slurm_acct_db
PidFile=$DBD_PID
LogFile=$DIR/log/slurmdbd.log
DebugLevel=info
EOF
    )
}

register() {  # the cluster, account "mirage" and this user in slurmdbd (each once)
    local i out=""
    for ((i = 0; i < 25; i++)); do
        out=$(sacctmgr -n -P list cluster format=cluster 2>&1) && break
        sleep 0.2
    done
    [[ $out == *mirage* ]] || sacctmgr -i add cluster mirage >/dev/null \
        || die "sacctmgr could not add the cluster (slurmdbd: $DIR/log/slurmdbd.log)"
    [[ -n $(sacctmgr -n -P list account mirage format=account 2>/dev/null) ]] \
        || sacctmgr -i add account mirage cluster=mirage >/dev/null || die "sacctmgr could not add account mirage"
    [[ -n $(sacctmgr -n -P list user "$(id -un)" format=user 2>/dev/null) ]] \
        || sacctmgr -i add user "$(id -un)" account=mirage cluster=mirage >/dev/null \
        || die "sacctmgr could not add user $(id -un)"
}

start_accounting() {
    start_db
    write_dbd_conf
    check_port slurmdbd "$DBD_PID" "$DBD_PORT"
    start_daemon slurmdbd "$DBD_PID" "$DBD_PORT" "$DIR/log/slurmdbd.log" slurmdbd
    register
}

node_states() {  # "NODE STATE" per node and partition (a node in several partitions: one line each)
    sinfo -h -N -n "$NODE_LIST" -o '%N %T' 2>/dev/null
}

slurmds_alive() {  # 0 if every node's slurmd runs; else names the one that exited
    local k
    for k in "${!SLURMD_PIDS[@]}"; do
        pid_alive "${SLURMD_PIDS[k]}" && continue
        echo "slurm-cluster: slurmd of ${NODE_NAMES[k]} exited" >&2
        log_tail slurmd "${SLURMD_LOGS[k]}"
        return 1
    done
}

wait_idle() {
    local st="" deadline=$((SECONDS + 60)) up
    while ((SECONDS < deadline)); do
        st=$(node_states || true)
        # the nodes that are up, each counted once
        up=$(awk '$2 ~ /^(idle|mixed|alloc|completing|planned)/ {print $1}' <<<"$st" | sort -u | wc -l)
        ((up == NODES)) && return 0
        # A running daemon that has died shows up here rather than after the timeout.
        pid_alive "$CTLD_PID" || { echo "slurm-cluster: slurmctld exited" >&2; log_tail slurmctld "$DIR/log/slurmctld.log"; exit 1; }
        slurmds_alive || exit 1
        sleep 0.1
    done
    echo "slurm-cluster: nodes $NODE_LIST did not become idle within 60 s (states: $(tr '\n' ' ' <<<"${st:-unknown}"))" >&2
    log_tail slurmctld "$DIR/log/slurmctld.log"
    log_tail slurmd "${SLURMD_LOGS[0]}"
    exit 1
}

with_accounting() {  # 0 if this cluster has (or is to start) its accounting database
    ((ACCOUNTING)) || [[ -f $DIR/slurmdbd.conf ]]
}

all_running() {
    pid_alive "$MUNGE_PID" && pid_alive "$CTLD_PID" && slurmds_alive 2>/dev/null || return 1
    ! with_accounting || { pid_alive "$DB_PID" && pid_alive "$DBD_PID"; }
}

do_start() {
    need_bins
    local new=$DIR/slurm.conf.new
    trap 'rm -f "$DIR/slurm.conf.new"' EXIT
    mkdir -p "$DIR/log" "$DIR/run" "$DIR/state" "$DIR/out"
    local k
    for k in "${!NODE_NAMES[@]}"; do mkdir -p "$DIR/spool/${NODE_NAMES[k]}"; done
    write_conf "$new"
    if all_running; then
        if cmp -s "$new" "$CONF"; then
            rm -f "$new"
            echo "slurm-cluster: already running in $DIR (SLURM_CONF=$CONF)"
            wait_idle
            return 0
        fi
        rm -f "$new"
        die "already running in $DIR with a different configuration (--cpus/--conf-extra/ports); run '$0 stop --dir $DIR' first"
    fi
    if pid_alive "$CTLD_PID" && ! cmp -s "$new" "$CONF"; then
        rm -f "$new"
        die "slurmctld runs in $DIR with a different configuration; run '$0 stop --dir $DIR' first"
    fi
    check_port slurmctld "$CTLD_PID" "$CTLD_PORT"
    for k in "${!NODE_NAMES[@]}"; do check_port slurmd "${SLURMD_PIDS[k]}" "${SLURMD_PORTS[k]}"; done
    mv -f "$new" "$CONF"
    if [[ $PROCTRACK == proctrack/cgroup ]]; then
        write_cgroup_conf "$DIR/cgroup.conf"
    else
        rm -f "$DIR/cgroup.conf"
    fi
    start_munged
    ((ACCOUNTING)) && start_accounting
    start_daemon slurmctld "$CTLD_PID" "$CTLD_PORT" "$DIR/log/slurmctld.log" \
        slurmctld -f "$CONF"
    for k in "${!NODE_NAMES[@]}"; do
        start_daemon slurmd "${SLURMD_PIDS[k]}" "${SLURMD_PORTS[k]}" "${SLURMD_LOGS[k]}" \
            slurmd -f "$CONF" -N "${NODE_NAMES[k]}"
    done
    wait_idle
    if ((NODES == 1)); then
        echo "slurm-cluster: running in $DIR: node $NODE with $CPUS CPUs, slurmctld port $CTLD_PORT, slurmd port $SLURMD_PORT"
    else
        echo "slurm-cluster: running in $DIR: nodes $NODE_LIST with $CPUS CPUs each, slurmctld port $CTLD_PORT, slurmd ports ${SLURMD_PORTS[*]}"
    fi
    echo "slurm-cluster: export SLURM_CONF=$CONF"
}

stop_pid() {  # stop_pid NAME PIDFILE [NAME PIDFILE ...]: SIGTERM to all at once, then wait
    local -a names=() pids=() files=()
    local pid i k left
    while (($# >= 2)); do
        if pid_alive "$2"; then
            pid=$(<"$2")
            kill -TERM "$pid" 2>/dev/null || true
            names+=("$1") pids+=("$pid") files+=("$2")
        else
            rm -f "$2"
        fi
        shift 2
    done
    for ((i = 0; i < 200; i++)); do
        left=0
        for k in "${!pids[@]}"; do
            if kill -0 "${pids[k]}" 2>/dev/null; then left=1; else rm -f "${files[k]}"; fi
        done
        ((left)) || return 0
        sleep 0.05
    done
    for k in "${!pids[@]}"; do
        kill -0 "${pids[k]}" 2>/dev/null || continue
        echo "slurm-cluster: ${names[k]} (pid ${pids[k]}) ignored SIGTERM for 10 s; sending SIGKILL" >&2
        kill -KILL "${pids[k]}" 2>/dev/null || true
        rm -f "${files[k]}"
    done
}

cancel_jobs() {
    local i ids
    pid_alive "$CTLD_PID" && [[ -f $CONF ]] || return 0
    ids=$(squeue -h -o '%i' 2>/dev/null || true)
    [[ -n $ids ]] || return 0
    # shellcheck disable=SC2086
    scancel $ids 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        [[ -z $(squeue -h -t running,completing,configuring -o '%i' 2>/dev/null || true) ]] && return 0
        sleep 0.1
    done
    echo "slurm-cluster: some jobs were still running after scancel" >&2
}

slurmd_pid_args() {  # "slurmd PIDFILE" for each node, as stop_pid takes them
    local f
    for f in "${SLURMD_PIDS[@]}"; do printf 'slurmd %s ' "$f"; done
}

any_slurmd_alive() {
    local f
    for f in "${SLURMD_PIDS[@]}"; do pid_alive "$f" && return 0; done
    return 1
}

do_stop() {
    case $ONLY in
        slurmctld) stop_pid slurmctld "$CTLD_PID"; return 0 ;;
        slurmd) stop_pid $(slurmd_pid_args); return 0 ;;
        munged) stop_pid munged "$MUNGE_PID"; return 0 ;;
        slurmdbd) stop_pid slurmdbd "$DBD_PID"; return 0 ;;
    esac
    if ! pid_alive "$MUNGE_PID" && ! pid_alive "$CTLD_PID" && ! any_slurmd_alive \
        && ! pid_alive "$DBD_PID" && ! pid_alive "$DB_PID"; then
        echo "slurm-cluster: not running ($DIR)"
        return 0
    fi
    cancel_jobs
    # the daemons together (each saves its state on SIGTERM; munged alone takes 2 s to
    # exit), then the database that slurmdbd may write to on its way out
    # shellcheck disable=SC2046  # the names and pid files have no spaces ($DIR is checked)
    stop_pid $(slurmd_pid_args) slurmctld "$CTLD_PID" slurmdbd "$DBD_PID" munged "$MUNGE_PID"
    stop_pid mariadbd "$DB_PID"
    echo "slurm-cluster: stopped ($DIR)"
}

do_status() {
    local n=0 name pidf k names=(munged slurmctld) files=("$MUNGE_PID" "$CTLD_PID")
    for k in "${!NODE_NAMES[@]}"; do
        if ((NODES == 1)); then names+=(slurmd); else names+=("slurmd (${NODE_NAMES[k]})"); fi
        files+=("${SLURMD_PIDS[k]}")
    done
    if with_accounting; then
        names+=(slurmdbd mariadbd) files+=("$DBD_PID" "$DB_PID")
    fi
    for k in "${!names[@]}"; do
        name=${names[k]} pidf=${files[k]}
        if pid_alive "$pidf"; then
            echo "$name: running (pid $(<"$pidf"))"
            n=$((n + 1))
        else
            echo "$name: stopped"
        fi
    done
    echo "dir: $DIR"
    echo "SLURM_CONF=$CONF"
    if pid_alive "$CTLD_PID"; then
        sinfo -N -o '%N %P %T %c' 2>&1 || true
    fi
    ((n == ${#names[@]})) && return 0
    ((n == 0)) && return 3
    return 1
}

case $cmd in
    start) do_start ;;
    stop) do_stop ;;
    status) do_status ;;
    env)
        echo "export SLURM_CONF=$CONF"
        echo "export MIRAGE_SLURM_DIR=$DIR"
        ;;
    conf) echo "$CONF" ;;
    render) write_conf /dev/stdout ;;
    -h|--help|help) usage 0 ;;
    *) echo "slurm-cluster: unknown command: $cmd" >&2; usage 2 ;;
esac
