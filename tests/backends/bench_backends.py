"""What each backend costs per PodGang on MemoryCluster: API writes and wall time of
`sync_podgang` (first sync, then a no-op re-sync) for N copies of the sample's base PodGang
(4 groups, 8 pods). Not a test (no timing asserts); run:

    /work/venv/bin/python -m tests.backends.bench_backends [N]
"""

from __future__ import annotations

import sys
import time
from typing import Any

from phalanx.api.grove import PodGang
from phalanx.backends import BackendRegistry
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from . import samples as s

PROFILES: list[tuple[str, dict[str, Any] | None, str]] = [
    ("default-scheduler", None, "default-scheduler (no gang)"),
    ("default-scheduler", {"gangScheduling": True, "workloadAPIVersion": "v1alpha1"}, "default-scheduler 1.35"),
    ("default-scheduler", {"gangScheduling": True, "workloadAPIVersion": "v1beta1"}, "default-scheduler 1.37"),
    ("kai-scheduler", {"defaultQueue": "q"}, "kai-scheduler"),
    ("volcano", None, "volcano"),
    ("koordinator", None, "koordinator"),
    ("phalanx-scheduler", None, "phalanx-scheduler"),
]


def _gang(i: int) -> PodGang:
    """The sample's base PodGang, renamed so each copy's groups are unique (as PodCliques are)."""
    pg = s.podgang(topology=True, name=f"gang-{i}")
    rename = {g.name: g.name.replace(s.PCS_NAME, f"pcs{i}") for g in pg.spec.pod_groups}
    for g in pg.spec.pod_groups:
        g.name = rename[g.name]
    for cfg in pg.spec.topology_constraint_group_configs or ():
        cfg.pod_group_names = [rename[n] for n in cfg.pod_group_names]
    return pg


def _writes(cluster: MemoryCluster) -> int:
    return sum(cluster.stats.writes.values())


async def measure(profile: str, config: dict[str, Any] | None, n: int) -> tuple[float, float, float, float]:
    cluster = MemoryCluster()
    registry = BackendRegistry.from_profiles([(profile, config)], profile)
    await registry.init_all(cluster)
    backend = registry.get(profile)
    await cluster.create(s.cluster_topology())
    gangs = [await cluster.create(_gang(i)) for i in range(n)]
    before = _writes(cluster)
    t0 = time.perf_counter()
    for g in gangs:
        await backend.sync_podgang(g)
    first = time.perf_counter() - t0
    first_writes = _writes(cluster) - before
    before = _writes(cluster)
    t0 = time.perf_counter()
    for g in gangs:
        await backend.sync_podgang(g)
    again = time.perf_counter() - t0
    return first_writes / n, first / n * 1e6, (_writes(cluster) - before) / n, again / n * 1e6


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print(f"{n} PodGangs of 4 groups / 8 pods each")
    print(f"{'backend':32} {'writes/gang':>11} {'us/sync':>8} {'re-sync writes':>15} {'us/re-sync':>10}")
    for profile, config, label in PROFILES:
        w, us, w2, us2 = run_virtual(measure(profile, config, n))
        print(f"{label:32} {w:11.1f} {us:8.0f} {w2:15.1f} {us2:10.0f}")


if __name__ == "__main__":
    main()
