# Sourced by the shell benchmarks (bash): a scratch folder with two fresh tmpfs mounts,
# $work/native and $work/backing, and an empty mount point $work/mnt; everything, and the
# Themis daemon whose pid the caller puts in $daemon, is cleaned up at exit.
#
#   source "$REPO/bench/_scratch.sh"; scratch_mounts NAME SIZE

scratch_cleanup() {
    cd /
    [[ -n ${daemon:-} ]] && kill "$daemon" 2>/dev/null && sleep 1
    mountpoint -q "$work/mnt" && fusermount3 -u -z "$work/mnt"
    for d in native backing; do mountpoint -q "$work/$d" && umount -l "$work/$d"; done
    rm -rf "$work"
}

scratch_mounts() {  # NAME SIZE: sets $work and $daemon
    work=$(mktemp -d "/tmp/$1-XXXXXX")
    chmod 755 "$work"
    daemon=""
    trap scratch_cleanup EXIT
    mkdir "$work/native" "$work/backing" "$work/mnt"
    mount -t tmpfs -o "size=$2" tmpfs "$work/native"
    mount -t tmpfs -o "size=$2" tmpfs "$work/backing"
}
