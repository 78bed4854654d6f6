"""Which scheduler APIs the target server serves (API discovery).

A client that can answer `await client.serves(kind) -> bool` (KubeCluster does, from
`/apis/<group>/<version>`) lets backends pick what the server serves. A client without it
(the embedded MemoryCluster serves every kind Phalanx models) gets `None`: "unknown, assume
the configured version".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from phalanx.api.workload_versions import WORKLOAD_API_VERSIONS
from phalanx.api.workloads import WORKLOAD_KINDS

if TYPE_CHECKING:
    from phalanx.api.base import Resource


@runtime_checkable
class ServesKinds(Protocol):
    async def serves(self, kind: type[Resource]) -> bool: ...


async def served_workload_versions(client: object) -> list[str] | None:
    """The scheduling.k8s.io Workload API versions served (oldest first), or None if the
    client cannot tell. A version counts only if every resource it needs is served
    (v1alpha2+ needs both `workloads` and `podgroups`)."""
    if not isinstance(client, ServesKinds):
        return None
    served = []
    for version in WORKLOAD_API_VERSIONS:
        workload_kind, podgroup_kind = WORKLOAD_KINDS[version]
        if not await client.serves(workload_kind):
            continue
        if podgroup_kind is not None and not await client.serves(podgroup_kind):
            continue
        served.append(version)
    return served
