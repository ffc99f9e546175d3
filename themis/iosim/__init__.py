"""Discrete-event simulator of I/O sharing on burst-buffer servers (see docs/themis-sim.md)."""
