"""Partitions as node pools: which units a job may use, and the backfill map over them.

A ``slurm.conf`` whose partitions list their ``Nodes=`` splits the cluster into *segments*:
the nodes that belong to exactly the same partitions. Nodes within a segment are
interchangeable for every job, so a segment is counted in units (nodes, or CPUs on a
CPU-counted cluster), and a partition is the list of its segments in node order. A job takes
units from its partition's segments, lowest node first (Slurm's select plugin, nodes of
equal weight). Overlapping partitions share segments; disjoint ones are separate clusters.

The backfill walk over these segments is compiled (sim/_poolwalk.c; its Python model is
tests/sim/pools_model.py).
"""

from __future__ import annotations

from sim.config import SlurmConfig

Alloc = list[tuple[int, int]]  # (segment, units) a job holds or reserves


class Pools:
    """The segments of a partitioned cluster and each partition's segments.

    ``seg_size[s]``: units of segment ``s``; ``part_segs[name]``: the segments of partition
    ``name`` in node order (the default partition under ``""`` too)."""

    def __init__(self, cfg: SlurmConfig, unit: str, total_units: int) -> None:
        names = cfg.node_names
        cpus = unit in ("cpus", "procs")
        sizes = cfg.node_cpus if cpus else [1] * len(names)
        size = sum(sizes)
        if size != total_units:
            raise ValueError(
                f"{cfg.source or 'slurm.conf'}: its partitions' Nodes= make a cluster of "
                f"{size} {'CPUs' if cpus else 'nodes'}; the simulator was given {total_units} "
                "(pass total_units / --nodes to match, or drop Nodes= from the partitions)"
            )
        # sets: a CPU-counted cluster has a node per CPU (90,000 took a minute with lists)
        listed = [(p.name, set(p.nodes)) for p in cfg.partitions.values()]
        members = [
            tuple(name for name, nodes in listed if not nodes or node in nodes) for node in names
        ]
        seg_of: dict[tuple[str, ...], int] = {}
        self.seg_size: list[int] = []
        for sig, units in zip(members, sizes, strict=True):
            s = seg_of.setdefault(sig, len(seg_of))
            if s == len(self.seg_size):
                self.seg_size.append(0)
            self.seg_size[s] += units
        self.part_segs: dict[str, tuple[int, ...]] = {}
        for p in cfg.partitions.values():
            self.part_segs[p.name] = tuple(s for sig, s in seg_of.items() if p.name in sig)
        self.part_size = {
            name: sum(self.seg_size[s] for s in segs) for name, segs in self.part_segs.items()
        }

    @staticmethod
    def active(cfg: SlurmConfig) -> bool:
        """Whether ``cfg``'s partitions split the cluster (some partition lacks a node)."""
        all_nodes = set(cfg.node_names)
        return any(p.nodes and set(p.nodes) != all_nodes for p in cfg.partitions.values())


def take(free: list[int], segs: tuple[int, ...], units: int) -> Alloc | None:
    """Take ``units`` from ``free`` over ``segs``, lowest segment first (in place); None,
    with ``free`` untouched, when they do not hold that many."""
    if sum(free[s] for s in segs) < units:
        return None
    alloc: Alloc = []
    need = units
    for s in segs:
        if need == 0:
            break
        got = min(free[s], need)
        if got:
            free[s] -= got
            alloc.append((s, got))
            need -= got
    return alloc
