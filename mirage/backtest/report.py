"""The backtest's tables and plot: each week and the totals of the development and test
weeks, for reactive, average, the frozen model (chosen at the first origin), the rolling
model (chosen again at each origin), the oracle, and the rolling choice's seeds apart."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hpcbase.atomic import atomic_path, atomic_write
from mirage.agents.common.hindsight import GapStats
from mirage.backtest import labels as lb
from mirage.backtest.origin import origin_path
from mirage.backtest.plan import Plan, Week

POLICIES = ("reactive", "average", "frozen", "rolling", "adapted", "oracle")
WEEKLY = (
    ("rolling", ("reactive", "average", "frozen")),
    ("adapted", ("reactive", "average", "rolling")),
)
"""Whose weekly wins over whom the report counts."""
STATS = ("abs_gap", "interruption", "overlap", "uninterrupted", "on_time")
SIMULATOR_FILE = "fidelity.json"
"""The simulator the log was replayed in and the replay's fidelity (:mod:`mirage.envs.twin`),
written by the command before the report; its line is printed beside every table."""


def collect(out: Path, plan: Plan) -> list[dict[str, Any]]:
    """Per origin week: the gaps (s) of every policy on its chains; weeks without a result
    (no chains, nothing known yet) are left out."""
    from mirage.eval.offline import oracle_gaps, rule_gaps

    frozen: Path | None = None
    weeks = []
    for week in plan.origins:
        path = origin_path(out, week)
        if not path.exists():
            continue
        res = json.loads(path.read_text())
        test = lb.load_week(out, week)
        if "skipped" in res or test is None:
            continue
        frozen = frozen or out / res["chosen_model"]
        chosen = res["chosen"]
        agent = chosen.rsplit("-", 1)[0]
        gaps = {
            "reactive": test.ep_end_gap,
            "average": lb.per_chain(test, "average_gap"),
            "frozen": rule_gaps(test, frozen)[0],
            "rolling": np.asarray(res["gaps"][chosen]),
            "oracle": oracle_gaps(test),
        }
        seeds = {s: np.asarray(res["gaps"][f"{agent}-s{s}"]) for s in plan.seeds}
        adapted = _adapted(out, plan, week, out / res["chosen_model"])
        weeks.append(
            {
                "week": week.label,
                "role": week.role,
                "chosen": chosen,
                "gaps": gaps,
                "seeds": seeds,
                "adapted": adapted,
            }
        )
    choose_adaptation(weeks)
    return weeks


def _adapted(out: Path, plan: Plan, week: Week, model: Path) -> dict[float, np.ndarray]:
    """The rolling model's gaps with each adaptation window (cached in ``OUT/adapt``)."""
    from mirage.backtest.adapt import adapted_gaps

    path = out / "adapt" / f"{week.label}.json"
    if path.exists():
        return {float(k): np.asarray(v) for k, v in json.loads(path.read_text()).items()}
    gaps = adapted_gaps(out, plan, week, model)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({str(k): v.tolist() for k, v in gaps.items()}))
    return gaps


def choose_adaptation(weeks: list[dict[str, Any]]) -> float:
    """The adaptation window (0: none) with the least mean ``|gap|`` over the development
    weeks; every week's ``adapted`` gaps are then that window's. Returns the window."""
    dev = [w for w in weeks if w["role"] == "dev"]
    options = {0.0: [w["gaps"]["rolling"] for w in dev]}
    for window in weeks[0]["adapted"] if weeks else ():
        options[window] = [w["adapted"][window] for w in dev]
    scores = {
        k: float(np.abs(np.concatenate(v)).mean()) if v else np.inf for k, v in options.items()
    }
    best = min(scores, key=lambda k: (scores[k], k))
    for w in weeks:
        w["gaps"]["adapted"] = w["gaps"]["rolling"] if best == 0.0 else w["adapted"][best]
        w["adaptation"] = {
            "window_days": best,
            "dev_abs_gap_h": {str(k): v / 3600 for k, v in scores.items()},
        }
    return best


def _stats(g: np.ndarray) -> dict[str, float]:
    st = GapStats.of(g)
    return {k: getattr(st, k) for k in ("chains", *STATS)}


def summarise(weeks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per week and per role (dev, test): every policy's statistics, the rolling model's
    weekly wins, the spread of the rolling choice over seeds, the adaptation chosen."""
    out: dict[str, Any] = {"weeks": [], "totals": {}}
    if weeks:
        out["adaptation"] = weeks[0]["adaptation"]
    for w in weeks:
        row = {"week": w["week"], "role": w["role"], "chosen": w["chosen"]}
        row.update({p: _stats(w["gaps"][p]) for p in POLICIES})
        out["weeks"].append(row)
    for role in ("dev", "test"):
        sel = [w for w in weeks if w["role"] == role]
        if not sel:
            continue
        tot: dict[str, Any] = {
            p: _stats(np.concatenate([w["gaps"][p] for w in sel])) for p in POLICIES
        }
        rows = [r for r in out["weeks"] if r["role"] == role]
        for mine, others in WEEKLY:
            for other in others:
                wins = sum(r[mine]["abs_gap"] < r[other]["abs_gap"] for r in rows)
                ties = sum(r[mine]["abs_gap"] == r[other]["abs_gap"] for r in rows)
                tot[f"{mine}_weeks_won_vs_{other}"] = [wins, ties, len(rows)]
        per_seed = [
            float(np.abs(np.concatenate([w["seeds"][s] for w in sel])).mean() / 3600)
            for s in sel[0]["seeds"]
        ]
        tot["rolling_seeds_abs_gap"] = per_seed
        out["totals"][role] = tot
    return out


def markdown(summary: dict[str, Any], plan: Plan) -> str:
    """The tables: totals per role (every statistic), then mean ``|gap|`` per week; beside
    each, the simulator and its replay's fidelity (``summary["simulator"]``) when known."""
    sim_line = summary.get("simulator", {}).get("line", "")
    beside = [sim_line, ""] if sim_line else []
    lines = [f"# Backtest of {Path(plan.trace).name}", ""]
    if plan.note:
        lines += [f"**{plan.note}**", ""]
    lines += [
        f"{plan.chains_per_week} chains per week, shapes (units, limit h) drawn from "
        f"{len(plan.shapes)} pair(s); agents {', '.join(plan.agents)}, seeds "
        f"{', '.join(map(str, plan.seeds))}; decisions every {plan.decision_interval:g} s.",
        "",
    ]
    for role, tot in summary["totals"].items():
        lines += [f"## Total over the {role} weeks", ""]
        lines += [
            "| policy | chains | mean abs gap (h) | interruption (h) | overlap (h) | "
            "uninterrupted | on time |",
            "|---|---|---|---|---|---|---|",
        ]
        for p in POLICIES:
            s = tot[p]
            lines.append(
                f"| {p} | {s['chains']} | {s['abs_gap']:.2f} | {s['interruption']:.2f} | "
                f"{s['overlap']:.2f} | {s['uninterrupted']:.0%} | {s['on_time']:.0%} |"
            )
        seeds = tot["rolling_seeds_abs_gap"]
        lines += [
            "",
            *beside,
            f"Rolling choice's single seeds: mean abs gap {np.mean(seeds):.2f} ± "
            f"{np.std(seeds):.2f} h ({', '.join(f'{x:.2f}' for x in seeds)}).",
        ]
        for mine, others in WEEKLY:
            for other in others:
                w, t, n = tot[f"{mine}_weeks_won_vs_{other}"]
                lines.append(f"{mine.capitalize()} beats {other} in {w} of {n} weeks ({t} ties).")
        lines.append("")
    if "adaptation" in summary:
        a = summary["adaptation"]
        tried = ", ".join(f"{k} d: {v:.2f} h" for k, v in a["dev_abs_gap_h"].items())
        lines += [
            f"Adaptation (daily threshold re-tuning on the chains known in the last N days; "
            f"0 = none), chosen on the development weeks: N = {a['window_days']:g} "
            f"(dev mean abs gap: {tried}).",
            "",
        ]
    lines += [
        "## Mean abs gap (h) per week",
        "",
        "| week | role | chains | " + " | ".join(POLICIES) + " | rolling model |",
        "|---|---|---|" + "---|" * len(POLICIES) + "---|",
    ]
    for r in summary["weeks"]:
        vals = " | ".join(f"{r[p]['abs_gap']:.2f}" for p in POLICIES)
        lines.append(
            f"| {r['week']} | {r['role']} | {r['reactive']['chains']} | {vals} | {r['chosen']} |"
        )
    if sim_line:
        lines += ["", sim_line]
    return "\n".join(lines) + "\n"


def plot(path: Path, summary: dict[str, Any], plan: Plan) -> None:
    """Mean ``|gap|`` per week for every policy; the test weeks shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["weeks"]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(rows) + 3), 4))
    styles = ("-", "-", "--", "-", ":", "-")  # overlapping lines stay visible
    for k, p in enumerate(POLICIES):
        ax.plot(
            x,
            [r[p]["abs_gap"] for r in rows],
            marker="os^vDx"[k],
            linestyle=styles[k],
            markersize=7 - k,
            label=p,
        )
    test = [i for i, r in enumerate(rows) if r["role"] == "test"]
    if test:
        ax.axvspan(test[0] - 0.5, test[-1] + 0.5, color="0.9", label="test weeks")
    ax.set_xticks(x, [r["week"] for r in rows], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("mean |gap| (h)")
    ax.set_title(f"Rolling-origin backtest: {Path(plan.trace).name}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)


def write(out: Path, plan: Plan) -> dict[str, Any]:
    """``backtest.md``, ``backtest.json`` and ``backtest.png`` in ``out``; the summary."""
    summary = summarise(collect(out, plan))
    if (out / SIMULATOR_FILE).exists():
        summary["simulator"] = json.loads((out / SIMULATOR_FILE).read_text())
    atomic_write(out / "backtest.json", json.dumps(summary, indent=1))
    atomic_write(out / "backtest.md", markdown(summary, plan))
    if summary["weeks"]:
        plot(out / "backtest.png", summary, plan)
    return summary
