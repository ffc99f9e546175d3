"""Hindsight data: at every decision of sampled chains, the observation and the exact gap
had the successor been submitted then.

Waiting does not change the world (the successor is not in the queue yet), so one replay
of a chain gives the gap of *every* submit time: the simulator is snapshotted at each
decision, the successor submitted, run until it starts, and restored
(:meth:`~mirage.envs.episode.ChainEpisode.what_if`). These labels make the decision a
prediction problem, and they evaluate any stopping rule exactly, offline.

Storage: one Parquet file with a row per decision (episode, decision index, times, the
label, the context row and where its history window ends) and a second one, ``*.hist``,
with the history rows of every episode (a window's rows are shared by consecutive
decisions, so each is stored once). The trace, split, chain, sizes and
:data:`~mirage.observation.FEATURE_VERSION` are in the schema metadata.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mirage.agents.common.policy import Decision
from mirage.envs.episode import ChainEpisode, EpisodeError
from mirage.envs.world import ChainSpec, ChainWorld
from mirage.observation import FEATURE_VERSION, N_FEATURES

DATASET_DECISION_INTERVAL = 1800.0
"""Seconds between labelled decisions (the model is then applied at any interval)."""

_WORLD: ChainWorld | None = None  # set in the parent before forking the workers


class DatasetError(ValueError):
    """A dataset that cannot be used; the message names the file and the reason."""


def label_episode(
    world: ChainWorld, chain: ChainSpec, t0: float, decision_interval: float
) -> dict[str, Any] | None:
    """One chain at ``t0``: history rows, context rows and the gap of submitting at each
    decision (and at the predecessor's end); None if the chain cannot be played."""
    resolved = chain.resolved(world.max_limit)
    try:
        ep = ChainEpisode(world, resolved, t0, decision_interval)
    except EpisodeError:
        return None
    if ep.done:
        return None
    window = world.window
    hist: list[np.ndarray] = []
    ctx, gaps, nows = [], [], []
    ends: list[int] = []
    last_now = None
    while not ep.done:
        obs = ep.observe()
        if last_now is None:
            hist.extend(obs[:window])
        else:
            new = int(round((ep.now - last_now) / world.sample_interval))
            hist.extend(obs[window - min(new, window) : window])
        last_now = ep.now
        ends.append(len(hist))
        ctx.append(obs[window])
        nows.append(ep.now)
        gaps.append(ep.what_if(0))
        ep.step(Decision.WAIT)
    assert ep.outcome is not None and ep.outcome.forced
    return {
        "t0": t0,
        "units": resolved.units,
        "pred_end": ep.pred_end,
        "end_gap": ep.outcome.gap,
        "now": nows,
        "gap": gaps,
        "hist_end": ends,
        "hist": np.asarray(hist, np.float32).tolist(),
        "ctx": np.asarray(ctx, np.float32).tolist(),
    }


def _worker(task: tuple[list[tuple[float, int]], float]) -> list[dict[str, Any]]:
    assert _WORLD is not None
    starts, di = task
    out = []
    for t0, units in starts:
        rec = label_episode(_WORLD, ChainSpec(units=units), t0, di)
        if rec is not None:
            out.append(rec)
    return out


def sample_starts(
    world: ChainWorld, split: str, episodes: int, chain_units: Sequence[int], seed: int
) -> list[tuple[float, int]]:
    """Seeded ``(t0, chain units)`` pairs in ``split``."""
    rng = np.random.default_rng(seed)
    return [
        (world.sample_start(split, rng), int(chain_units[int(rng.integers(len(chain_units)))]))
        for _ in range(episodes)
    ]


def collect(
    world: ChainWorld,
    starts: Sequence[tuple[float, int]],
    decision_interval: float = DATASET_DECISION_INTERVAL,
    jobs: int = 1,
    chunk: int = 4,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Label every ``(t0, units)`` in ``jobs`` forked processes; records in start order."""
    from tqdm import tqdm

    global _WORLD
    tasks = [(list(starts[i : i + chunk]), decision_interval) for i in range(0, len(starts), chunk)]
    bar = tqdm(total=len(starts), desc="hindsight labels", unit="chain", disable=not progress)
    recs: list[dict[str, Any]] = []
    _WORLD = world
    try:
        if jobs <= 1:
            parts = map(_worker, tasks)
            for part, task in zip(parts, tasks, strict=True):
                recs += part
                bar.update(len(task[0]))
        else:
            with mp.get_context("fork").Pool(jobs) as pool:
                for part, task in zip(pool.imap(_worker, tasks), tasks, strict=True):
                    recs += part
                    bar.update(len(task[0]))
    finally:
        _WORLD = None
        bar.close()
    return recs


@dataclass
class HindsightData:
    """Decisions of many chains with their exact gaps (seconds), in episode order."""

    meta: dict[str, Any]
    episode: np.ndarray  # (N,) episode index of each decision
    step: np.ndarray  # (N,) decision index within its episode
    now: np.ndarray  # (N,)
    gap: np.ndarray  # (N,) gap if the successor is submitted at this decision
    hist_end: np.ndarray  # (N,) row after the newest history row of the decision's window
    ctx: np.ndarray  # (N, F) context rows
    hist: np.ndarray  # (H, F) history rows of all episodes
    ep_t0: np.ndarray  # (E,)
    ep_units: np.ndarray  # (E,) chain size
    ep_end_gap: np.ndarray  # (E,) gap of submitting at the predecessor's end (reactive)
    ep_first: np.ndarray = field(init=False)  # (E + 1,) first decision of each episode

    def __post_init__(self) -> None:
        counts = np.bincount(self.episode, minlength=len(self.ep_t0))
        self.ep_first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def __len__(self) -> int:
        return int(self.gap.shape[0])

    @property
    def window(self) -> int:
        return int(self.meta["window"])

    @property
    def episodes(self) -> int:
        return int(self.ep_t0.shape[0])

    def obs(self, idx: np.ndarray | slice | None = None) -> np.ndarray:
        """Observation matrices ``(n, window + 1, F)`` of the decisions ``idx``."""
        sel = np.arange(len(self))[idx if idx is not None else slice(None)]
        rows = self.hist_end[sel, None] - self.window + np.arange(self.window)[None]
        return np.concatenate([self.hist[rows], self.ctx[sel, None]], axis=1)

    def is_last(self) -> np.ndarray:
        """True at each episode's last decision (after it: the forced submit)."""
        last = np.zeros(len(self), bool)
        last[self.ep_first[1:] - 1] = True
        return last

    def subset(self, episodes: np.ndarray) -> HindsightData:
        """The decisions of the given episodes (renumbered; history rows kept whole)."""
        episodes = np.asarray(episodes)
        keep = np.isin(self.episode, episodes)
        remap = np.full(self.episodes, -1)
        remap[episodes] = np.arange(len(episodes))
        return HindsightData(
            meta=dict(self.meta),
            episode=remap[self.episode[keep]],
            step=self.step[keep],
            now=self.now[keep],
            gap=self.gap[keep],
            hist_end=self.hist_end[keep],
            ctx=self.ctx[keep],
            hist=self.hist,
            ep_t0=self.ep_t0[episodes],
            ep_units=self.ep_units[episodes],
            ep_end_gap=self.ep_end_gap[episodes],
        )


def from_records(recs: Sequence[dict[str, Any]], meta: dict[str, Any]) -> HindsightData:
    """Assemble :func:`label_episode` records into arrays."""
    if not recs:
        raise DatasetError("no chain could be labelled (every episode failed)")
    hist, ctx, ends, eps, steps, nows, gaps = [], [], [], [], [], [], []
    offset = 0
    for e, r in enumerate(recs):
        n = len(r["gap"])
        hist.append(np.asarray(r["hist"], np.float32).reshape(-1, N_FEATURES))
        ctx.append(np.asarray(r["ctx"], np.float32).reshape(-1, N_FEATURES))
        ends.append(np.asarray(r["hist_end"], np.int64) + offset)
        offset += hist[-1].shape[0]
        eps.append(np.full(n, e, np.int64))
        steps.append(np.arange(n, dtype=np.int64))
        nows.append(np.asarray(r["now"], float))
        gaps.append(np.asarray(r["gap"], float))
    return HindsightData(
        meta=dict(meta),
        episode=np.concatenate(eps),
        step=np.concatenate(steps),
        now=np.concatenate(nows),
        gap=np.concatenate(gaps),
        hist_end=np.concatenate(ends),
        ctx=np.concatenate(ctx),
        hist=np.concatenate(hist),
        ep_t0=np.array([r["t0"] for r in recs], float),
        ep_units=np.array([r["units"] for r in recs], np.int64),
        ep_end_gap=np.array([r["end_gap"] for r in recs], float),
    )


def concat(parts: Sequence[HindsightData]) -> HindsightData:
    """One dataset of several (e.g. the same split simulated at several cluster sizes):
    episodes renumbered in order, history rows appended; ``meta`` of the first, with
    ``total_units`` the list of every part's and ``episodes_asked`` their sum."""
    if not parts:
        raise DatasetError("nothing to concatenate")
    shape = parts[0].hist.shape[1:], parts[0].window
    for d in parts[1:]:
        if (d.hist.shape[1:], d.window) != shape:
            raise DatasetError("datasets differ in observation shape; cannot concatenate")
    ep_off = np.cumsum([0] + [d.episodes for d in parts[:-1]])
    hist_off = np.cumsum([0] + [d.hist.shape[0] for d in parts[:-1]])
    meta = dict(parts[0].meta)
    sizes = [d.meta.get("total_units") for d in parts]
    meta["total_units"] = sizes if len(set(map(str, sizes))) > 1 else sizes[0]
    meta["episodes_asked"] = sum(int(d.meta.get("episodes_asked") or d.episodes) for d in parts)
    return HindsightData(
        meta=meta,
        episode=np.concatenate([d.episode + o for d, o in zip(parts, ep_off, strict=True)]),
        step=np.concatenate([d.step for d in parts]),
        now=np.concatenate([d.now for d in parts]),
        gap=np.concatenate([d.gap for d in parts]),
        hist_end=np.concatenate([d.hist_end + o for d, o in zip(parts, hist_off, strict=True)]),
        ctx=np.concatenate([d.ctx for d in parts]),
        hist=np.concatenate([d.hist for d in parts]),
        ep_t0=np.concatenate([d.ep_t0 for d in parts]),
        ep_units=np.concatenate([d.ep_units for d in parts]),
        ep_end_gap=np.concatenate([d.ep_end_gap for d in parts]),
    )


def _hist_path(path: Path) -> Path:
    return path.with_name(path.stem + ".hist.parquet")


def save(data: HindsightData, path: str | Path) -> Path:
    """Write ``path`` (decisions) and ``*.hist.parquet`` (history rows), atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hpcbase.atomic import atomic_path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    md = {b"mirage": json.dumps(data.meta).encode()}
    ep = data.episode
    cols: dict[str, Any] = {
        "episode": ep,
        "step": data.step,
        "now": data.now,
        "gap": data.gap,
        "hist_end": data.hist_end,
        "t0": data.ep_t0[ep],
        "units": data.ep_units[ep],
        "end_gap": data.ep_end_gap[ep],
    }
    cols.update({f"ctx{i}": data.ctx[:, i] for i in range(N_FEATURES)})
    table = pa.table(cols).replace_schema_metadata(md)
    hist = pa.table({f"f{i}": data.hist[:, i] for i in range(N_FEATURES)})
    with atomic_path(_hist_path(path), suffix=".parquet") as tmp:
        pq.write_table(hist.replace_schema_metadata(md), tmp)
    with atomic_path(path, suffix=".parquet") as tmp:
        pq.write_table(table, tmp)
    return path


def load(path: str | Path) -> HindsightData:
    """Read a dataset written by :func:`save`; checks its feature version."""
    import pyarrow.parquet as pq

    path = Path(path)
    for part in (path, _hist_path(path)):  # pyarrow's own error does not name the file
        if not part.is_file():
            raise DatasetError(f"{part}: no such dataset file")
    try:
        table = pq.read_table(path)
        hist = pq.read_table(_hist_path(path))
    except Exception as exc:  # pyarrow's errors for a file that is not Parquet
        raise DatasetError(f"{path}: not a Mirage dataset ({exc})") from None
    raw = (table.schema.metadata or {}).get(b"mirage")
    if raw is None:
        raise DatasetError(f"{path}: not a Mirage dataset (no 'mirage' metadata)")
    meta = json.loads(raw)
    if meta.get("feature_version") != FEATURE_VERSION:
        raise DatasetError(
            f"{path}: feature version {meta.get('feature_version')} != this code's "
            f"{FEATURE_VERSION}; regenerate it with `mirage dataset`"
        )
    c = {name: table.column(name).to_numpy() for name in table.column_names}
    ep = c["episode"].astype(np.int64)
    first = np.flatnonzero(np.r_[True, ep[1:] != ep[:-1]])
    return HindsightData(
        meta=meta,
        episode=ep,
        step=c["step"].astype(np.int64),
        now=c["now"],
        gap=c["gap"],
        hist_end=c["hist_end"].astype(np.int64),
        ctx=np.stack([c[f"ctx{i}"] for i in range(N_FEATURES)], 1).astype(np.float32),
        hist=np.stack([hist.column(f"f{i}").to_numpy() for i in range(N_FEATURES)], 1).astype(
            np.float32
        ),
        ep_t0=c["t0"][first],
        ep_units=c["units"][first].astype(np.int64),
        ep_end_gap=c["end_gap"][first],
    )


def dataset_meta(
    world: ChainWorld,
    split: str,
    episodes: int,
    seed: int,
    decision_interval: float,
    chain_units: Sequence[int],
) -> dict[str, Any]:
    """What a dataset was made from (kept in its schema metadata)."""
    return {
        "trace": Path(world.trace.source or "").name,
        "split": split,
        "split_ranges": [list(iv) for iv in world.splits[split]],
        "episodes_asked": episodes,
        "seed": seed,
        "total_units": world.total_units,
        "max_limit": world.max_limit,
        "window": world.window,
        "sample_interval": world.sample_interval,
        "decision_interval": decision_interval,
        "chain_units": list(chain_units),
        "feature_version": FEATURE_VERSION,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``mirage dataset``: hindsight labels of a split, written as Parquet."""
    import argparse
    import sys

    from mirage.envs.options import add_world_args, build_world, unit_sizes
    from mirage.eval import array as slurm_array

    p = argparse.ArgumentParser(prog="mirage dataset", description=main.__doc__)
    add_world_args(p)
    p.add_argument("--split", default="train", help="train, validation or test")
    p.add_argument("--episodes", type=int, default=400, help="chains to label (default 400)")
    p.add_argument(
        "--chain-sizes",
        default=None,
        help="comma list of chain job sizes drawn per chain (default --chain-units)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the chains' start times")
    p.add_argument("--decision-interval", type=float, default=DATASET_DECISION_INTERVAL)
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--out", required=True, help="FILE.parquet (and FILE.hist.parquet)")
    p.add_argument("--no-progress", action="store_true")
    slurm_array.add_array_args(p, "the chains")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    shard, options = slurm_array.check_array_args(p, args, args.episodes)
    if args.episodes <= 0:
        p.error("--episodes must be positive")
    if shard is None and not args.out.endswith(".parquet"):
        p.error("--out must end in .parquet")
    sizes = unit_sizes(args.total_units)
    if len(sizes) != 1:
        p.error("--total-units: a dataset takes one cluster size")
    try:
        chain_units = [int(x) for x in (args.chain_sizes or str(args.chain_units)).split(",")]
    except ValueError:
        p.error(f"--chain-sizes: expected integers, got {args.chain_sizes!r}")
    world = build_world(args, not args.no_progress, sizes[0])
    if args.split not in world.splits:
        p.error(f"unknown split {args.split!r}; have {', '.join(world.splits)}")
    starts = sample_starts(world, args.split, args.episodes, chain_units, args.seed)
    progress = not args.no_progress
    if shard is not None:  # one task of a --slurm-array run
        mine = [list(starts[k]) for k in slurm_array.shard_indices(len(starts), shard[1], shard[0])]
        recs = collect(world, [(t, int(u)) for t, u in mine], args.decision_interval, args.jobs)
        slurm_array.write_shard(Path(args.out), *shard, mine, recs)
        return 0
    if args.slurm_array is not None:
        try:
            recs = _collect_on_slurm(args, argv, starts, options)
        except RuntimeError as exc:
            print(f"mirage dataset: {exc}", file=sys.stderr)
            return 1
    else:
        recs = collect(world, starts, args.decision_interval, args.jobs, progress=progress)
    meta = dataset_meta(
        world, args.split, args.episodes, args.seed, args.decision_interval, chain_units
    )
    try:
        data = from_records(recs, meta)
    except DatasetError as exc:
        print(f"mirage dataset: {exc}", file=sys.stderr)
        return 1
    save(data, args.out)
    print(f"{args.out}: {data.episodes} chains, {len(data)} decisions", file=sys.stderr)
    return 0


def _collect_on_slurm(
    args: Any, argv: list[str], starts: Sequence[tuple[float, int]], options: dict[str, object]
) -> list[dict[str, Any]]:
    """The records of every chain, labelled by a Slurm job array (one shard per task), in
    the order of ``starts``."""
    import sys

    from hpcbase.slurm import SlurmError, get_client
    from mirage.eval import array as slurm_array

    out = Path(args.out).resolve()
    try:
        recs = slurm_array.run_array(
            get_client(min_interval=args.slurm_poll),
            [sys.executable, "-m", "mirage.dataset", *argv],
            [list(s) for s in starts],
            args.slurm_array,
            out.with_name(out.stem + ".shards"),
            options,
            args.slurm_poll,
            not args.no_progress,
        )
    except SlurmError as exc:
        raise RuntimeError(str(exc)) from None
    order = {(float(t), int(u)): i for i, (t, u) in reversed(list(enumerate(starts)))}
    return sorted(recs, key=lambda r: order[(float(r["t0"]), int(r["units"]))])


if __name__ == "__main__":  # the tasks of a --slurm-array run
    raise SystemExit(main())
