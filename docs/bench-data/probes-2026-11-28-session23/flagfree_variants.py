"""The flag-free replay's mean ratio, KS and Spearman on logs, under variants of its world
(session 23, seen logs only). A variant is tokens joined by "-":
  fifo | rule   the priority where the start order bounds no depth: FIFO (shipped) or the
                typical priority (session 22's rule, from 9a1ff72^:sim/start_order.py, saved
                at RULE)
  hN            the availability window, N hours (shipped: h6)
  wM            while a recorded job had waited 10 min or more, the most used within M h
                only (sim.availability.fitted's waiting window)
  clip          never more available than the size the log states, except where the
                recorded schedule itself holds more (then what it holds in that 15-min bin)
  ext           a job whose recorded run outlasted its limit runs to its recorded end (its
                limit raised to its run time)
  "shipped" = fifo-h6.
    python flagfree_variants.py RULE VARIANT[,VARIANT...] LOG... ("self": a log the
    simulator recorded itself on 24 procs, replayed with --nodes 24, as the suite's test;
    "slice": the embedded LS6 slice)"""
import contextlib
import csv
import importlib.util
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

import sim.availability as av  # noqa: E402
import sim.replay_cli as rc  # noqa: E402
import sim.start_order as shipped_order  # noqa: E402
from sim.config import SlurmConfig  # noqa: E402
from sim.fidelity import fidelity  # noqa: E402
from sim.traces import read_trace  # noqa: E402

spec = importlib.util.spec_from_file_location("rule_order", sys.argv[1])
rule_order = importlib.util.module_from_spec(spec)
sys.modules["rule_order"] = rule_order
spec.loader.exec_module(rule_order)
shipped_fitted = av.fitted
shipped_start_order = rc._start_order
shipped_read = rc.read_trace


def variant_read(*a, **kw):
    t = shipped_read(*a, **kw)
    if state.get("ext"):
        from dataclasses import replace as dc_replace

        t = dc_replace(t, limit=np.maximum(t.limit, t.runtime))
    return t


rc.read_trace = variant_read
state = {}


def rule_start_order(trace, total, limits, console):
    order = rule_order.infer_order(trace, total, limits)
    if order is None:
        return None
    console.print(f"note: from the recorded start order: {order.describe()}", soft_wrap=True)
    if not order.bounded and order.priority == "fifo":
        return None
    return SlurmConfig.from_text("\n".join(order.lines()) + "\n", "the recorded start order")


def variant_fitted(use, total, *, window, **kw):
    window = state["window_h"] * 3600.0
    extra = {}
    if state["wait_h"] is not None:
        extra = {"waiting_trace": state["trace"], "waiting_window": state["wait_h"] * 3600.0}
    a = shipped_fitted(use, total, window=window, **extra, **kw)
    stated = state["stated"]
    if not state["clip"] or stated is None or not a.times:
        return a
    b = shipped_fitted(use, total, window=0.0, **kw)  # each bin's own most used
    ta, ua, tb, ub = (np.asarray(x) for x in (a.times, a.units, b.times, b.units))
    t = np.union1d(ta, tb)
    at = lambda ts, us: us[np.searchsorted(ts, t, side="right") - 1]  # noqa: E731
    u = np.minimum(at(ta, ua), np.maximum(stated, at(tb, ub)))
    u[-1] = total
    keep = np.r_[True, u[1:] != u[:-1]]
    return av.Availability(tuple(t[keep].tolist()), tuple(int(x) for x in u[keep]))


def stated_size(log):
    """The size an SWF header states (MaxProcs, else MaxNodes), else None."""
    import gzip

    if not log.endswith((".swf", ".swf.gz")):
        return None
    opener = gzip.open if log.endswith(".gz") else open
    found = {}
    with opener(log, "rt", errors="replace") as f:
        for line in f:
            if not line.startswith(";"):
                break
            key, _, val = line[1:].partition(":")
            if key.strip().lower() in ("maxprocs", "maxnodes") and val.split():
                found[key.strip().lower()] = int(val.split()[0])
    return found.get("maxprocs") or found.get("maxnodes")


def run(log, variant):
    tokens = ["fifo", "h6"] if variant == "shipped" else variant.split("-")
    rc._start_order = rule_start_order if "rule" in tokens else shipped_start_order
    get = lambda c, d: next((float(x[1:]) for x in tokens if x[0] == c and x[1:].replace(".", "").isdigit()), d)  # noqa: E731
    state["window_h"], state["wait_h"] = get("h", 6.0), get("w", None)
    state["clip"] = "clip" in tokens
    state["ext"] = "ext" in tokens
    av.fitted = variant_fitted
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "o.csv"
        extra = []
        if log == "self":
            sys.path.insert(0, str(ROOT / "tests" / "sim"))
            from recorded import write_recorded

            log = str(write_recorded(Path(tmp) / "rec.swf", units=24))
            extra = ["--nodes", "24"]
        state["trace"] = read_trace(log) if log else None
        args = ([log] if log else []) + extra + ["--no-profile", "--no-progress", "--out", str(out)]
        if not log:
            from sim.data import default_trace_path

            state["trace"] = read_trace(str(default_trace_path()))
        state["stated"] = stated_size(log)
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc.main(args)
        with out.open() as f:
            rows = list(csv.DictReader(f))
    num = lambda k: np.array([float(r[k]) if r[k] not in ("", "nan") else np.nan for r in rows])  # noqa: E731
    sim, rec = num("wait"), num("recorded_wait")
    fi = fidelity(sim, rec)
    same = np.allclose(num("start"), num("recorded_start"), equal_nan=True)
    name = "self-recorded" if extra else (Path(log).name or "embedded slice")
    print(f"{name} {variant}: mean {fi.sim_mean_h:.2f} / {fi.rec_mean_h:.2f} h "
          f"(x{fi.sim_mean_h / fi.rec_mean_h:.2f}), KS {fi.ks:.3f}, Spearman {fi.spearman:.3f}"
          + (f", starts reproduced: {same}" if extra else ""), flush=True)


for log in sys.argv[3:]:
    for variant in sys.argv[2].split(","):
        run("" if log == "slice" else log, variant)
