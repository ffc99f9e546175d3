"""Parsers for the text Slurm's commands print; each raises SlurmError naming the bad field.

Commands are run with ``SLURM_TIME_FORMAT=%s`` so times come as Unix seconds, but ISO local
times (Slurm's default, and the jobcomp/filetxt log) are accepted too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from hpcbase.slurm.errors import SlurmError
from hpcbase.slurm.models import PENDING_STATES, RUNNING_STATES, JobInfo, PartitionInfo
from hpcbase.slurmtime import is_unlimited, parse_duration, parse_timestamp

T = TypeVar("T")

#: Field separator for ``squeue -O`` (ASCII unit separator: never in names or comments).
SEP = "\x1f"
#: ``squeue -O`` fields, in the order :func:`parse_squeue` reads them; Comment last.
SQUEUE_FIELDS = (
    "JobID",
    "Name",
    "UserName",
    "State",
    "NumNodes",
    "NumCPUs",
    "TimeLimit",
    "SubmitTime",
    "EligibleTime",
    "StartTime",
    "EndTime",
    "Reason",
    "Dependency",
    "exit_code",
    "Partition",
    "Comment",
)
#: ``sacct -P`` fields, in the order :func:`parse_sacct` reads them; Comment last.
SACCT_FIELDS = (
    "JobIDRaw",
    "JobName",
    "User",
    "State",
    "NNodes",
    "NCPUS",
    "Timelimit",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Reason",
    "ExitCode",
    "Partition",
    "Comment",
)

# Keys whose values may contain spaces (and "=") in scontrol/jobcomp key=value lines.
_FREE_TEXT = frozenset(
    {
        "JobName",
        "Name",
        "Comment",
        "AdminComment",
        "SystemComment",
        "Command",
        "WorkDir",
        "StdErr",
        "StdIn",
        "StdOut",
        "Reason",
    }
)
# Keys scontrol show job / jobcomp print in Slurm 22.05 (a free-text value absorbs others).
_KNOWN_KEYS = frozenset(
    re.split(
        r"\s+",
        """JobId JobName UserId GroupId MCS_label Priority Nice Account QOS JobState Reason
    Dependency Requeue Restarts BatchFlag Reboot ExitCode DerivedExitCode RunTime TimeLimit
    TimeMin SubmitTime EligibleTime AccrueTime StartTime EndTime Deadline SuspendTime
    SecsPreSuspend LastSchedEval Scheduler Partition AllocNode:Sid ReqNodeList ExcNodeList
    NodeList BatchHost NumNodes NumCPUs NumTasks CPUs/Task ReqB:S:C:T TRES Socks/Node
    NtasksPerN:B:S:C CoreSpec MinCPUsNode MinMemoryNode MinMemoryCPU MinTmpDiskNode Features
    DelayBoot OverSubscribe Contiguous Licenses Network Command WorkDir Comment AdminComment
    SystemComment StdErr StdIn StdOut Power MailUser MailType ArrayJobId ArrayTaskId
    ArrayTaskThrottle PreemptEligibleTime PreemptTime Reservation TresPerNode TresPerJob
    CpusPerTres MemPerTres Container ContainerID Name UserId Partition NodeCnt ProcCnt
    ReservationName Tres WcKey Cluster HetJobId HetJobOffset HetJobIdSet JobState""",
    )
)
_KV_SPLIT = re.compile(r" (?=[A-Za-z][\w:/]*=)")
_NULL = {"", "(null)", "None", "N/A"}


def _field(name: str, text: str, conv: Callable[[str], T]) -> T:
    try:
        return conv(text)
    except (ValueError, TypeError) as e:
        raise SlurmError(f"cannot read Slurm field {name}={text!r}: {e}") from None


def _text(s: str) -> str | None:
    s = s.strip()
    return None if s in _NULL else s


def _count(s: str) -> int:
    """An integer count; ranges such as ``1-2`` give their minimum."""
    m = re.match(r"\s*(\d+)", s)
    if not m:
        raise ValueError("not a count")
    return int(m.group(1))


def parse_exit_code(s: str) -> int | None:
    """Shell-style status from Slurm's two forms: ``"code:signal"`` (scontrol, sacct:
    ``"2:0"`` -> 2, ``"0:9"`` -> 137) or squeue's raw wait status (``"768"`` -> 3,
    ``"9"`` -> 137); None when empty."""
    s = s.strip()
    if s in _NULL:
        return None
    if ":" in s:
        code, _, sig = s.partition(":")
        return 128 + int(sig) if int(sig) else int(code)
    status = int(s)
    if status & 0x7F:
        return 128 + (status & 0x7F)
    return (status >> 8) & 0xFF


def parse_kv_line(line: str) -> dict[str, str]:
    """``Key=Value Key=Value ...`` (``scontrol -o``, jobcomp/filetxt) into a dict."""
    out: dict[str, str] = {}
    last = ""
    for token in _KV_SPLIT.split(line.strip()):
        key, eq, value = token.partition("=")
        if last in _FREE_TEXT and key not in _KNOWN_KEYS:
            out[last] = f"{out[last]} {token}"
            continue
        if not eq:
            if last:
                out[last] = f"{out[last]} {token}"
            continue
        out[key] = value
        last = key
    return {k: v.strip() for k, v in out.items()}


def _job(
    *,
    jid: str,
    name: str,
    user: str,
    state: str,
    nodes: str,
    cpus: str,
    limit: str,
    submit: str,
    eligible: str,
    start: str,
    end: str,
    reason: str,
    dependency: str,
    exit_code: str,
    partition: str,
    comment: str,
    node_list: str = "",
) -> JobInfo:
    st = _field("State", state, lambda s: s.split()[0].rstrip("+").upper())
    pending = st in PENDING_STATES
    finished = not pending and st not in RUNNING_STATES
    user_name = user.strip()
    uid_match = re.search(r"\((\d+)\)$", user_name)  # scontrol: "root(0)"
    user_name = re.sub(r"\(\d+\)$", "", user_name)
    return JobInfo(
        id=_field("JobId", jid, _count),
        name=name.strip(),
        user=user_name,
        state=st,
        nodes=_field("NumNodes", nodes, _count) if nodes.strip() else 0,
        cpus=_field("NumCPUs", cpus, _count) if cpus.strip() else 0,
        time_limit=_field("TimeLimit", limit, parse_limit),
        submit=_field("SubmitTime", submit, parse_timestamp),
        eligible=_field("EligibleTime", eligible, parse_timestamp),
        start=None if pending else _field("StartTime", start, parse_timestamp),
        end=_field("EndTime", end, parse_timestamp) if finished else None,
        reason=_text(reason),
        dependency=_text(dependency),
        exit_code=_field("ExitCode", exit_code, parse_exit_code),
        comment=_text(comment),
        partition=_text(partition),
        uid=int(uid_match.group(1)) if uid_match else None,
        node_list=_text(node_list),
    )


def parse_limit(text: str) -> int | None:
    """A limit as Slurm prints it (whole seconds), None for no limit or an unset one."""
    seconds = parse_duration(text, fractions=False, unset_ok=True)
    return None if is_unlimited(seconds) else int(seconds)


# The keyword of :func:`_job` that each column fills, in the order of the field tuples.
_JOB_KEYS = (
    "jid",
    "name",
    "user",
    "state",
    "nodes",
    "cpus",
    "limit",
    "submit",
    "eligible",
    "start",
    "end",
    "reason",
)


def _delimited(text: str, sep: str, fields: tuple[str, ...], what: str) -> list[list[str]]:
    """The non-blank lines of ``text`` split into ``len(fields)`` columns at ``sep`` (the last
    keeps any further ``sep``); a line with fewer columns is a SlurmError naming it."""
    n = len(fields)
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(sep, n - 1)
        if len(parts) != n:
            raise SlurmError(
                f"{what} output line {lineno}: expected {n} fields, got {len(parts)}: {line!r}"
            )
        rows.append(parts)
    return rows


def parse_squeue(text: str) -> list[JobInfo]:
    """Rows of ``squeue -h -O`` with :data:`SQUEUE_FIELDS`, each suffixed by :data:`SEP`."""
    jobs = []
    for parts in _delimited(text, SEP, SQUEUE_FIELDS, "squeue"):
        *head, dep, ec, part, comment = parts
        cols = dict(zip(_JOB_KEYS, head, strict=True))
        jobs.append(
            _job(
                **cols,
                dependency=dep,
                exit_code=ec,
                partition=part,
                comment=comment.rstrip(SEP),
            )
        )
    return jobs


def parse_scontrol_job(text: str) -> JobInfo | None:
    """The first job of ``scontrol show job -o ID``; None if the output holds none."""
    for line in text.splitlines():
        if line.startswith("JobId="):
            return job_from_kv(parse_kv_line(line))
    return None


def job_from_kv(kv: dict[str, str]) -> JobInfo:
    """A job from ``scontrol -o`` or jobcomp/filetxt key=value pairs."""
    g = kv.get
    if "JobId" not in kv:
        raise SlurmError(f"Slurm job record without JobId: {kv!r}")
    # jobcomp/filetxt prints TimeLimit in minutes, which Slurm's duration grammar reads so.
    return _job(
        jid=kv["JobId"],
        name=g("JobName", g("Name", "")),
        user=g("UserId", ""),
        state=g("JobState", ""),
        nodes=g("NumNodes", g("NodeCnt", "")),
        cpus=g("NumCPUs", g("ProcCnt", "")),
        limit=g("TimeLimit", ""),
        submit=g("SubmitTime", ""),
        eligible=g("EligibleTime", ""),
        start=g("StartTime", ""),
        end=g("EndTime", ""),
        reason=g("Reason", ""),
        dependency=g("Dependency", ""),
        exit_code=g("ExitCode", ""),
        partition=g("Partition", ""),
        comment=g("Comment", ""),
        node_list=g("NodeList", ""),
    )


def parse_sacct(text: str) -> list[JobInfo]:
    """Rows of ``sacct -n -P -X -o`` with :data:`SACCT_FIELDS`."""
    jobs = []
    for parts in _delimited(text, "|", SACCT_FIELDS, "sacct"):
        *head, ec, part, comment = parts
        cols = dict(zip(_JOB_KEYS, head, strict=True))
        jobs.append(_job(**cols, dependency="", exit_code=ec, partition=part, comment=comment))
    return jobs


def parse_jobcomp(text: str) -> list[JobInfo]:
    """Finished jobs from a jobcomp/filetxt log (one ``Key=Value`` line per job)."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(job_from_kv(parse_kv_line(line)))
        except SlurmError as e:
            raise SlurmError(f"jobcomp line {lineno}: {e}") from None
    return out


def parse_partitions(text: str) -> list[PartitionInfo]:
    """``scontrol show partition -o`` lines."""
    parts = []
    for line in text.splitlines():
        if not line.startswith("PartitionName="):
            continue
        kv = parse_kv_line(line)
        parts.append(
            PartitionInfo(
                name=kv["PartitionName"],
                total_nodes=_field("TotalNodes", kv.get("TotalNodes", "0"), int),
                total_cpus=_field("TotalCPUs", kv.get("TotalCPUs", "0"), int),
                max_time=_field("MaxTime", kv.get("MaxTime", "UNLIMITED"), parse_limit),
                default=kv.get("Default", "NO").upper() == "YES",
                state=kv.get("State", "UP"),
            )
        )
    return parts


def parse_start_estimates(text: str) -> dict[int, tuple[str, float | None]]:
    """``squeue --start -h -o %i|%P|%S`` lines -> {job id: (partition, expected start)};
    the start is None where Slurm has no estimate (``N/A``)."""
    out: dict[int, tuple[str, float | None]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 3:
            raise SlurmError(
                f"squeue --start line {lineno}: expected 'id|partition|start': {line!r}"
            )
        jid, part, start = parts
        out[_field("JobId", jid, _count)] = (
            part.strip(),
            _field("StartTime", start, parse_timestamp),
        )
    return out


def parse_sbatch(text: str) -> int:
    """The job id ``sbatch --parsable`` prints (``ID`` or ``ID;cluster``)."""
    for line in text.splitlines():
        head = line.strip().split(";")[0]
        if head.isdigit():
            return int(head)
    raise SlurmError(f"sbatch printed no job id: {text.strip()!r}")


_TEST_ONLY = re.compile(r"\bto start at (\S+)")


def parse_test_only(text: str) -> float | None:
    """The expected start ``sbatch --test-only`` reports (``sbatch: Job N to start at T
    using ...``, on stderr), as Unix time; None when it names none."""
    m = _TEST_ONLY.search(text)
    return None if m is None else _field("StartTime", m.group(1), parse_timestamp)


def _expand_hostlist(expr: str) -> list[str]:
    """Every host of one Slurm hostlist item such as ``rack[1-2]-n[01-03,7]``."""
    m = re.search(r"\[([^\]]*)\]", expr)
    if not m:
        return [expr]
    head, tail = expr[: m.start()], expr[m.end() :]
    hosts = []
    for rng in m.group(1).split(","):
        lo, _, hi = rng.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise SlurmError(f"bad hostlist range {rng!r} in {expr!r}")
        for n in range(int(lo), int(hi or lo) + 1):
            hosts += [f"{head}{n:0{len(lo)}d}{rest}" for rest in _expand_hostlist(tail)]
    return hosts


def hostlist_contains(hostlist: str, host: str) -> bool:
    """Whether ``host`` is one of the hosts of a Slurm hostlist (``gpu[001-084],login1``)."""
    for item in re.split(r",(?![^\[]*\])", hostlist.strip()):
        if item and host in _expand_hostlist(item):
            return True
    return False
