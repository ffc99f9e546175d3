"""The suite's tests (a package, so that helpers import as ``tests.<dir>.<module>``)."""
