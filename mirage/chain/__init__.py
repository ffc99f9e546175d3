"""Job chains on a live Slurm cluster: the user's ``mirage chain`` command, the state store,
the watcher that drives a chain and its reconciliation with Slurm. See docs/mirage-live.md."""
