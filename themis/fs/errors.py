"""Turn every failure inside a FUSE handler into an errno for the caller, never a crash.

pyfuse3 stops its main loop on any exception other than ``FUSEError``, so each handler is
wrapped: an ``OSError`` passes its errno through (ENOENT, EACCES, ENOSPC, ...), anything else is
logged and answered with EIO.
"""

from __future__ import annotations

import errno
import functools
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import pyfuse3

log = logging.getLogger("themis.fs")

P = ParamSpec("P")
R = TypeVar("R")

_QUIET = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.ENODATA, errno.ENOTDIR, errno.EISDIR}
_last_logged: dict[int, float] = {}


def _log_rarely(op: str, err: int, text: str) -> None:
    """Log an errno once a minute at most, so a vanished backing store cannot flood the log."""
    now = time.monotonic()
    if now - _last_logged.get(err, -1e9) >= 60.0:
        _last_logged[err] = now
        log.warning("%s failed: %s (errno %d, further ones muted for 60 s)", op, text, err)


def fuse_errors(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Decorate an ``async`` FUSE handler so it only ever raises ``FUSEError``."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except pyfuse3.FUSEError:
            raise
        except OSError as exc:
            err = exc.errno or errno.EIO
            if err not in _QUIET:
                _log_rarely(fn.__name__, err, exc.strerror or str(exc))
            raise pyfuse3.FUSEError(err) from None
        except Exception:
            log.exception("%s: unexpected error; answering EIO", fn.__name__)
            raise pyfuse3.FUSEError(errno.EIO) from None

    return wrapper
