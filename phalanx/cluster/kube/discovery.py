"""What the API server serves, from discovery (`/apis/<group>/<version>`), per group version.

KubeCluster asks it one thing today: whether a kind has a status subresource. The peers'
CRDs differ there (Volcano's and Koordinator's PodGroups have none; KAI's has one), and a
write to a missing `/status` is a 404 that looks exactly like a deleted object. So status
writes are routed by what the server serves, not by what the model assumes.

One GET per group version, remembered; looked at again when the kind is missing from it (a
CRD installed since) or a `/status` write found no such resource (a CRD replaced since).
Core kinds (`v1`) are never looked up: their status subresources are fixed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.cluster.client import ApiError, NotFound

if TYPE_CHECKING:
    from phalanx.api.base import Resource

    from .transport import Transport


class Discovery:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._resources: dict[str, frozenset[str]] = {}  # group version -> resource names

    async def _fetch(self, group_version: str) -> frozenset[str] | None:
        try:
            data = await self.transport.request("GET", f"/apis/{group_version}")
        except NotFound:
            return None  # not served (or a server without discovery): the model decides
        names = frozenset(str(r.get("name", "")) for r in data.get("resources") or ())
        self._resources[group_version] = names
        return names

    async def status_subresource(self, kind: type[Resource]) -> bool:
        """Whether the served resource of `kind` has a status subresource; the model's
        HAS_STATUS when discovery cannot tell."""
        group_version = kind.API_VERSION
        if "/" not in group_version:
            return kind.HAS_STATUS
        names = self._resources.get(group_version)
        if names is None or kind.PLURAL not in names:
            try:
                names = await self._fetch(group_version)
            except ApiError:
                names = None
        if names is None or kind.PLURAL not in names:
            return kind.HAS_STATUS
        return f"{kind.PLURAL}/status" in names

    def forget(self, kind: type[Resource]) -> None:
        """Look again next time (a `/status` write found no such resource)."""
        self._resources.pop(kind.API_VERSION, None)
