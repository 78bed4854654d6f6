"""A real Kubernetes control plane for tests and benchmarks, the controller-runtime envtest way.

    from phalanx.envtest import ControlPlane, create_nodes, gpu_cluster_spec, running_kubelet

    with ControlPlane.start(scheduler=True, controller_manager=True) as plane:
        op = start_operator(plane)                   # `phalanx operator` subprocess
        sched = start_phalanx_scheduler(plane)       # `phalanx scheduler` subprocess
        async def main():
            async with plane.client() as kube:       # a KubeCluster
                await create_nodes(kube, gpu_cluster_spec(16))
                async with running_kubelet(kube):    # bound pods become Running
                    ...
        asyncio.run(main())

Binaries: KUBEBUILDER_ASSETS, else ../shared/kube unpacked into a cache (binaries.py).
Layer: above `sim` (it reuses the simulated kubelet and cluster specs), below `cli` (so
`phalanx bench` can start one).
"""

from .accounts import bind_cluster_role
from .audit import AuditEvent, client_errors
from .binaries import Binaries, BinariesNotFound, find_binaries
from .components import DEFAULT_CONTROLLERS, Component
from .controlplane import ControlPlane, ControlPlaneOptions
from .crds import install_crds, uninstall_crds
from .kubelet import Kubelet, running_kubelet
from .logs import find_tracebacks
from .manifests import apply_documents
from .nodes import NOT_READY_TAINT, create_nodes, delete_nodes, gpu_cluster_spec
from .peer_crds import PEERS, PeerCRDsNotFound, peer_crds, peer_crds_dir
from .process import ManagedProcess, live_processes, stop_all
from .services import (
    PhalanxService,
    operator_config,
    start_operator,
    start_phalanx_scheduler,
)
from .wait import Pending, WaitTimeout, wait_until, wait_until_async

__all__ = [
    "AuditEvent", "PEERS", "PeerCRDsNotFound", "bind_cluster_role", "client_errors",
    "peer_crds", "peer_crds_dir",
    "Binaries", "BinariesNotFound", "apply_documents", "Component", "ControlPlane", "ControlPlaneOptions",
    "DEFAULT_CONTROLLERS", "Kubelet", "ManagedProcess", "NOT_READY_TAINT", "Pending",
    "PhalanxService", "WaitTimeout", "create_nodes", "delete_nodes", "find_binaries",
    "find_tracebacks", "gpu_cluster_spec", "install_crds", "live_processes", "operator_config",
    "running_kubelet", "start_operator", "start_phalanx_scheduler", "stop_all",
    "uninstall_crds", "wait_until", "wait_until_async",
]
