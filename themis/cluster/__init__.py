"""Cluster mode: per-node Themis daemons enforce one global policy through Redis.

``records`` (the per-node usage report), ``store`` (Redis), ``control`` (global allocation to
local rate caps, pure) and ``link`` (the daemon's trio task).  See docs/themis.md.
"""
