"""The Volcano backend's topology check on a real kube-apiserver, timed.

Starts etcd and kube-apiserver 1.36 (phalanx/envtest), installs Volcano's CRDs (from
../shared/peer-crds) and Phalanx's, creates N fake GPU nodes in racks and blocks and a
ClusterTopology over their labels, then runs `VolcanoBackend.sync_cluster_topology` (what
the ClusterTopologyBinding controller calls) four times: the first writes every HyperNode,
the next three find them in line. Prints each check's wall and CPU seconds as JSON.

    python bench/volcano_topology_check.py [NODES]     # default 5,000
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from phalanx.api.crds import crds as phalanx_crds
from phalanx.api.grove import ClusterTopology
from phalanx.api.volcano_topology import HyperNode
from phalanx.backends.volcano import VolcanoBackend, VolcanoBackendConfig
from phalanx.envtest import (
    ControlPlane,
    create_nodes,
    find_binaries,
    gpu_cluster_spec,
    install_crds,
    peer_crds,
)
from phalanx.sim.clusterspec import default_topology


async def checks(plane: ControlPlane, nodes: int) -> dict[str, object]:
    async with plane.client() as kube:
        await install_crds(kube, peer_crds("volcano") + phalanx_crds())
        await create_nodes(kube, gpu_cluster_spec(nodes))
        ct = await kube.create(ClusterTopology.model_validate({
            "metadata": {"name": "bench"},
            "spec": {"levels": [level.to_dict() for level in default_topology()]}}))
        backend = VolcanoBackend(VolcanoBackendConfig())
        await backend.init(kube)
        out: dict[str, object] = {"nodes": nodes}
        for i in range(4):
            wall, cpu = time.perf_counter(), time.process_time()
            await backend.sync_cluster_topology(ct)
            out[f"check{i}"] = {"wall_seconds": round(time.perf_counter() - wall, 3),
                                "cpu_seconds": round(time.process_time() - cpu, 3)}
        out["hypernodes"] = len((await kube.list(HyperNode)).items)
        return out


def main() -> None:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    plane = ControlPlane.start(binaries=find_binaries())
    try:
        print(json.dumps(asyncio.run(checks(plane, nodes))))
    finally:
        plane.stop()


if __name__ == "__main__":
    main()
