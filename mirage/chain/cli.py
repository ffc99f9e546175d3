"""``mirage chain``: submit, list, inspect, cancel and watch job chains.

mirage chain submit SCRIPT --segments N [--policy NAME|MODEL.zip] [--keep-going]
                    [sbatch options...]
mirage chain list | status ID | cancel ID | watch ID | wait-prev
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hpcbase.slurm import SlurmError, SlurmUnavailable
from mirage.chain import paths
from mirage.chain.driver import ChainDriver, user_gave
from mirage.chain.store import ACTIVE, ENDED, ChainStore
from mirage.chain.watcher import (
    DEFAULT_SETTINGS,
    WatcherBusy,
    client_for,
    install_stop_signals,
    settings_of,
    spawn,
    watch,
)
from mirage.live.decisions import PolicyError, resolve_policy

log = logging.getLogger("mirage.chain")

#: sbatch options mirage sets itself on every segment.
RESERVED = ("--export", "--comment", "-d", "--dependency", "--parsable", "--wrap")


class UsageError(Exception):
    """Bad input: printed as ``mirage chain: error: ...`` with exit status 2."""


def _positive(kind: type) -> Any:
    def conv(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(
                f"must be at least 1, got {text}" if kind is int else f"must be > 0, got {text}"
            )
        return value

    return conv


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mirage chain", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--state-dir", help="state directory (default $MIRAGE_STATE_DIR or $XDG_STATE_HOME/mirage)"
    )
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser(
        "submit",
        help="submit a chain of N segments of SCRIPT",
        description="Options not listed here go to sbatch for every segment, with sbatch's "
        "meaning: none of these shadows an sbatch option (-N is sbatch's --nodes).",
        allow_abbrev=False,  # an abbreviated sbatch option must reach sbatch
    )
    s.add_argument("script", type=Path)
    s.add_argument("--segments", type=_positive(int), required=True)
    s.add_argument(
        "--policy",
        default=os.environ.get("MIRAGE_POLICY", "default"),
        help="baseline name, 'default' (the shipped model) or MODEL.zip",
    )
    s.add_argument(
        "--keep-going",
        action="store_true",
        help="go on after a segment fails (default: the chain stops)",
    )
    s.add_argument(
        "--no-watch",
        action="store_true",
        help="do not start a background watcher (systemd user unit or agentd drives the chain)",
    )
    s.add_argument(
        "--driver",
        choices=("watcher", "agentd"),
        default="watcher",
        help="who drives the chain: a user watcher, or the site daemon (opt-in)",
    )
    s.add_argument(
        "--agentd",
        default=os.environ.get("MIRAGE_AGENTD_URL", ""),
        help="ask this agentd (http://host:port) for decisions",
    )
    s.add_argument(
        "--time-scale",
        type=_positive(float),
        default=None,
        metavar="K",
        help="the cluster replays a site's load K times faster: the policy sees its queue at "
        "the site's scale, and sample and decision intervals default to the site's / K",
    )
    for name, kind in (
        ("decision-interval", float),
        ("sample-interval", float),
        ("window", int),
        ("poll-interval", float),
        ("min-interval", float),
        ("retry-attempts", int),
        ("retry-timeout", float),
    ):
        key = name.replace("-", "_")
        s.add_argument(
            f"--{name}",
            type=_positive(kind),
            default=None,
            help=f"watcher setting (default {DEFAULT_SETTINGS[key]})",
        )
    sub.add_parser("list", help="list chains").add_argument("--json", action="store_true")
    st = sub.add_parser("status", help="a chain's segments, decisions and events")
    st.add_argument("chain_id")
    st.add_argument("--json", action="store_true")
    c = sub.add_parser("cancel", help="cancel a chain and its unfinished jobs")
    c.add_argument("chain_id")
    w = sub.add_parser("watch", help="drive a chain in the foreground until it ends")
    w.add_argument("chain_id")
    wp = sub.add_parser(
        "wait-prev",
        help="inside a segment: wait until the previous "
        "segment has ended (MIRAGE_PREV_* variables)",
    )
    wp.add_argument("--timeout", type=float, default=0.0, help="seconds (0: no limit)")
    return p


def _open(args: argparse.Namespace) -> ChainStore:
    return ChainStore(paths.state_dir(args.state_dir))


def _chain_or_error(store: ChainStore, chain_id: str):
    try:
        return store.chain(chain_id)
    except KeyError:
        raise UsageError(f"no chain {chain_id!r} in {store.path}") from None


def cmd_submit(args: argparse.Namespace, extra: list[str]) -> int:
    script: Path = args.script
    if not script.exists():
        raise UsageError(f"script {script}: no such file")
    if not script.is_file() or not os.access(script, os.R_OK):
        raise UsageError(f"script {script}: not a readable file")
    sbatch_args = list(extra)
    for a in sbatch_args:
        if user_gave([a], *RESERVED):
            raise UsageError(
                f"sbatch option {a.split('=')[0]} is set by mirage for each segment; leave it out"
            )
    settings = {k: getattr(args, k) for k in DEFAULT_SETTINGS if getattr(args, k, None) is not None}
    settings["agentd_url"] = args.agentd
    settings["slurm_conf"] = os.environ.get("SLURM_CONF", "")
    s = settings_of(settings)
    policy_name = args.policy
    if not args.agentd:
        try:
            policy, policy_name = resolve_policy(args.policy)
        except PolicyError as e:
            raise UsageError(f"--policy: {e}") from None
        shape = getattr(policy, "obs_shape", None)
        if shape is not None and shape[0] - 1 != s["window"]:
            raise UsageError(
                f"--policy {args.policy}: the model was trained with a history "
                f"window of {shape[0] - 1} samples; give --window {shape[0] - 1}"
            )
    if s["decision_interval"] < s["sample_interval"]:
        raise UsageError("--decision-interval must be at least --sample-interval")
    store = _open(args)
    try:
        chain = store.create_chain(
            str(script.resolve()),
            os.getcwd(),
            args.segments,
            args.policy,
            args.keep_going,
            sbatch_args,
            args.driver,
            settings,
        )
        client = client_for(s)
        driver = ChainDriver(
            store,
            client,
            decider=None,  # type: ignore[arg-type]
            decision_interval=s["decision_interval"],
        )
        try:
            jid = driver.submit_segment(chain, 0, "first")
        except SlurmUnavailable as e:
            print(
                f"mirage chain: Slurm is unavailable ({e}); chain {chain.id} is recorded "
                "and its watcher submits segment 0 once Slurm answers",
                file=sys.stderr,
            )
            jid = None
        except SlurmError as e:
            print(
                f"mirage chain: error: sbatch refused segment 0 of {script}: {e}", file=sys.stderr
            )
            return 1
        print(
            f"chain {chain.id}: {args.segments} segments of {script}, policy "
            f"{policy_name}" + (f"; segment 0 is job {jid}" if jid else "")
        )
        if args.driver == "agentd":
            print(f"chain {chain.id} is driven by the site daemon (agentd)")
        elif not args.no_watch:
            pid = spawn(store.root, chain.id)
            print(f"watcher pid {pid}, log {paths.chain_dir(store.root, chain.id)}/watcher.log")
        else:
            print(f"start its watcher with: mirage chain watch {chain.id}")
    finally:
        store.close()
    return 0


def _fmt_time(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def cmd_list(args: argparse.Namespace) -> int:
    store = _open(args)
    try:
        rows: list[dict[str, Any]] = []
        for c in store.chains():
            segs = store.segments(c.id)
            done = sum(1 for s in segs if s.status == ENDED)
            rows.append(
                {
                    "id": c.id,
                    "status": c.status,
                    "segments": c.segments,
                    "ended": done,
                    "policy": c.policy,
                    "created": c.created,
                    "script": c.script,
                    "driver": c.driver,
                    "job": segs[-1].job_id if segs else None,
                }
            )
    finally:
        store.close()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'CHAIN':10} {'STATUS':10} {'ENDED':>7} {'JOB':>8} {'POLICY':16} {'CREATED':19} SCRIPT")
    for r in rows:
        print(
            f"{r['id']:10} {r['status']:10} {r['ended']:>3}/{r['segments']:<3} "
            f"{r['job'] or '-':>8} {r['policy'][:16]:16} {_fmt_time(r['created'])} {r['script']}"
        )
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    store = _open(args)
    try:
        c = _chain_or_error(store, args.chain_id)
        segs = store.segments(c.id)
        decisions = store.decisions(c.id)
        events = store.events(c.id)
    finally:
        store.close()
    if args.json:
        print(
            json.dumps(
                {
                    "chain": {k: getattr(c, k) for k in c.__dataclass_fields__},
                    "segments": [{k: getattr(s, k) for k in s.__dataclass_fields__} for s in segs],
                    "decisions": decisions,
                    "events": events,
                },
                indent=1,
            )
        )
        return 0
    print(f"chain {c.id}: {c.status}{' (' + c.reason + ')' if c.reason else ''}")
    print(
        f"  script {c.script} x {c.segments}, policy {c.policy}, driver {c.driver}"
        f"{', keep going' if c.keep_going else ''}"
    )
    print(f"  {'SEG':>3} {'JOB':>8} {'HOW':9} {'STATE':10} {'START':19} {'END':19} GAP")
    for s in segs:
        gap = "-" if s.gap is None else f"{s.gap:+.0f} s"
        print(
            f"  {s.idx:>3} {s.job_id or '-':>8} {s.how:9} {s.slurm_state or s.status:10} "
            f"{_fmt_time(s.start)} {_fmt_time(s.end_time)} {gap}"
        )
    last = decisions[-1] if decisions else None
    print(
        f"  {len(decisions)} decisions; last: "
        + (
            f"{last['action']} by {last['policy']}"
            + (f" [{last['inputs']['model']}]" if last["inputs"].get("model") else "")
            + f" for segment {last['segment']} at {_fmt_time(last['time'])}"
            if last
            else "-"
        )
    )
    for t, what in events[-8:]:
        print(f"  {_fmt_time(t)} {what}")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    store = _open(args)
    try:
        c = _chain_or_error(store, args.chain_id)
        if c.status != ACTIVE:
            raise UsageError(f"chain {c.id} is already {c.status}")
        driver = ChainDriver(
            store,
            client_for(settings_of(c.settings)),
            decider=None,  # type: ignore[arg-type]
            decision_interval=1.0,
        )
        jobs = driver.cancel(c.id)
    finally:
        store.close()
    print(f"chain {c.id} cancelled; jobs cancelled: {' '.join(map(str, jobs)) or 'none'}")
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    root = paths.state_dir(args.state_dir)
    store = ChainStore(root)
    try:
        _chain_or_error(store, args.chain_id)
    finally:
        store.close()
    stop = threading.Event()
    install_stop_signals(stop)
    try:
        return watch(root, args.chain_id, stop)
    except WatcherBusy as e:
        print(f"mirage chain: {e}", file=sys.stderr)
        return 1


def cmd_wait_prev(args: argparse.Namespace) -> int:
    marker = os.environ.get("MIRAGE_PREV_DONE_FILE", "")
    if os.environ.get("MIRAGE_PREV_RUNNING") != "1" or not marker:
        return 0
    deadline = time.monotonic() + args.timeout if args.timeout > 0 else float("inf")
    while not Path(marker).exists():
        if time.monotonic() > deadline:
            print(
                f"mirage chain: previous segment not ended after {args.timeout:g} s",
                file=sys.stderr,
            )
            return 1
        time.sleep(2.0)
    return 0


COMMANDS: dict[str, Callable[..., int]] = {
    "submit": cmd_submit,
    "list": cmd_list,
    "status": cmd_status,
    "cancel": cmd_cancel,
    "watch": cmd_watch,
    "wait-prev": cmd_wait_prev,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    after = argv.index("--") if "--" in argv else len(argv)
    args, extra = parser.parse_known_args(argv[:after])
    extra += argv[after + 1 :]
    if extra and args.cmd != "submit":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(
        level=logging.INFO if args.verbose or args.cmd == "watch" else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.cmd == "submit":
            return cmd_submit(args, extra)
        return COMMANDS[args.cmd](args)
    except UsageError as e:
        print(f"mirage chain: error: {e}", file=sys.stderr)
        return 2
    except (SlurmError, OSError) as e:
        print(f"mirage chain: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
