"""Workload trace readers: SWF, sacct exports and a documented CSV form.

All readers return a :class:`~sim.traces.model.Trace`; :func:`read_trace` picks the reader
from the file's content.
"""

from sim.traces.model import Trace, TraceError, TraceWarning

__all__ = ["Trace", "TraceError", "TraceWarning"]
