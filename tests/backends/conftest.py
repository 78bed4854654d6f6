"""Fixtures of the default-scheduler backend's real-server tests (test_kube_real.py,
test_kube_gate_free_real.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from phalanx.api.crds import crds
from phalanx.envtest import PhalanxService, install_crds, operator_config, start_operator
from phalanx.envtest.ports import free_port


@pytest.fixture(scope="module")
def grove_crds(control_plane: Any) -> None:
    async def main() -> None:
        async with control_plane.client() as kube:
            await install_crds(kube, crds())

    asyncio.run(main())


@pytest.fixture
def gang_operator(control_plane: Any, grove_crds: None) -> Iterator[Callable[..., PhalanxService]]:
    """`gang_operator(mismatch_policy, **profile)`: `phalanx operator --kubeconfig` whose only
    profile is default-scheduler with gangScheduling (and `profile`'s other keys, e.g.
    `podSchedulingGate=False`); stopped after the test."""
    started: list[PhalanxService] = []

    def start(mismatch_policy: str = "reject", **profile: Any) -> PhalanxService:
        cfg = operator_config(
            profiles=("default-scheduler",), default_profile="default-scheduler",
            probe_port=free_port(), metrics_port=free_port(), webhook_port=free_port(),
            profile_configs={"default-scheduler": {"gangScheduling": True,
                                                   "mismatchPolicy": mismatch_policy,
                                                   **profile}})
        op = start_operator(control_plane, config=cfg)
        started.append(op)
        return op

    try:
        yield start
    finally:
        for op in started:
            op.stop()
