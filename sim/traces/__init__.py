"""Workload trace readers: SWF, sacct exports and a documented CSV form.

All readers return a :class:`~sim.traces.model.Trace`; :func:`read_trace` picks the reader
from the file's content. Formats and fallbacks: docs/traces.md.
"""

from sim.traces.model import Trace, TraceError, TraceWarning
from sim.traces.read import detect_format, read_trace
from sim.traces.swf import write_swf

__all__ = ["Trace", "TraceError", "TraceWarning", "detect_format", "read_trace", "write_swf"]
