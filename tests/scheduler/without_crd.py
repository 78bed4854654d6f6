"""A MemoryCluster that, like a real API server without a CRD, does not serve one kind until
the CRD is "installed": discovery says it is not served and its list answers 404."""

from __future__ import annotations

from typing import Any

from phalanx.cluster.client import NotFound
from phalanx.cluster.memory import MemoryCluster


class WithoutCRD(MemoryCluster):
    def __init__(self, kind: type, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.missing: type | None = kind

    def install(self) -> None:
        self.missing = None

    async def serves(self, kind: type) -> bool:
        return kind is not self.missing

    async def list(self, kind: Any, *args: Any, **kwargs: Any) -> Any:
        if kind is self.missing:
            raise NotFound("the server could not find the requested resource")
        return await super().list(kind, *args, **kwargs)
