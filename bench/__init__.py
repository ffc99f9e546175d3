"""Benchmarks: scripts that print a ratio against a same-run baseline and a RESULT line."""
