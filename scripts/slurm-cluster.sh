#!/usr/bin/env bash
# The local single-node Slurm cluster; the script itself ships with the package
# (hpcbase/slurm/slurm-cluster.sh), where hpcbase.slurm.localcluster finds it.
exec bash "$(dirname "$0")/../hpcbase/slurm/slurm-cluster.sh" "$@"
