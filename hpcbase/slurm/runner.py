"""Run Slurm commands with a timeout, retries and exponential backoff.

Failures that mean "slurmctld or munged cannot be reached" are retried and end in
:class:`SlurmUnavailable`; any other failure raises :class:`SlurmError` at once with the
command's stderr.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hpcbase.slurm.errors import SlurmError, SlurmUnavailable

log = logging.getLogger(__name__)

# The request never reached slurmctld: safe to retry even a submission.
_NOT_SENT = re.compile(
    r"connect failure|Connection refused|Unable to contact slurm controller|"
    r"Munge encode failed|Failed to access .*munge|Couldn't connect to munged",
    re.IGNORECASE,
)
# The request may have reached slurmctld, which did not answer in time.
_NO_ANSWER = re.compile(
    r"Socket timed out|Zero Bytes were transmitted|Communication connection failure|"
    r"Connection timed out|Connection reset|slurmctld.*not responding|"
    r"Slurm backup controller in standby mode",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try: ``attempts`` tries of at most ``timeout`` s each, waiting
    ``backoff``, 2*``backoff``, ... (at most ``backoff_max``) between them."""

    attempts: int = 4
    timeout: float = 30.0
    backoff: float = 1.0
    backoff_max: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts must be >= 1, got {self.attempts}")
        if self.timeout <= 0:
            raise ValueError(f"RetryPolicy.timeout must be > 0, got {self.timeout}")
        if self.backoff < 0 or self.backoff_max < 0:
            raise ValueError("RetryPolicy.backoff and backoff_max must be >= 0")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        return min(self.backoff * 2 ** (attempt - 1), self.backoff_max)


RunFn = Callable[..., "subprocess.CompletedProcess[str]"]


class CommandRunner:
    """Runs Slurm commands; ``calls`` counts real invocations per program."""

    def __init__(
        self,
        policy: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        run: RunFn = subprocess.run,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self.env = dict(env or {})
        self.calls: Counter[str] = Counter()
        self._run = run
        self._sleep = sleep

    def run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        idempotent: bool = True,
        with_stderr: bool = False,
    ) -> str:
        """Run ``argv``; return its stdout (then its stderr, with ``with_stderr``). A
        non-idempotent command (sbatch) is retried only when the request surely never
        reached slurmctld."""
        full_env = {**os.environ, "SLURM_TIME_FORMAT": "%s", **self.env, **(env or {})}
        cmd = " ".join(argv)
        last = ""
        for attempt in range(1, self.policy.attempts + 1):
            self.calls[os.path.basename(argv[0])] += 1
            try:
                proc = self._run(
                    list(argv),
                    input=input,
                    capture_output=True,
                    text=True,
                    env=full_env,
                    timeout=self.policy.timeout,
                )
            except FileNotFoundError:
                raise SlurmUnavailable(
                    f"{argv[0]} not found: install Slurm's client commands (slurm-wlm)"
                ) from None
            except subprocess.TimeoutExpired:
                last = f"no answer within {self.policy.timeout:g} s"
                if not idempotent:
                    raise SlurmUnavailable(
                        f"{cmd}: {last}; the request may or may not have been applied"
                    ) from None
            else:
                if proc.returncode == 0:
                    return proc.stdout + ((proc.stderr or "") if with_stderr else "")
                err = (proc.stderr or proc.stdout or "").strip()
                last = err or f"exit status {proc.returncode}"
                transient = bool(_NOT_SENT.search(err)) or (
                    idempotent and bool(_NO_ANSWER.search(err))
                )
                if not transient:
                    if _NO_ANSWER.search(err):
                        raise SlurmUnavailable(
                            f"{cmd}: {last} (not retried: the request may have been applied)"
                        )
                    raise SlurmError(f"{cmd} failed (exit status {proc.returncode}): {last}")
            if attempt < self.policy.attempts:
                delay = self.policy.delay(attempt)
                log.warning(
                    "%s: %s; retrying in %.1f s (%d/%d)",
                    argv[0],
                    last,
                    delay,
                    attempt,
                    self.policy.attempts,
                )
                self._sleep(delay)
        raise SlurmUnavailable(
            f"Slurm is unavailable: {cmd}: {last} (after {self.policy.attempts} attempts)"
        )
