"""The real Kubernetes tier: one control plane per test process.

- `control_plane`: etcd + kube-apiserver 1.36 (Workload API on), started once per process
  (pytest-xdist's workers each have their own), on first use, and stopped at the end of the
  session (or by the harness's nets on Ctrl-C or a crash). Skipped, with the reason, when
  no binaries are found (phalanx/envtest/binaries.py: KUBEBUILDER_ASSETS, else ../shared/kube
  beside the checkout).
- `kube_namespace`: a fresh namespace per test, which is how tests sharing the server keep
  apart. Cluster-scoped objects a test creates are its own to delete (`fake_nodes` does).
- `kube_scheduler`, `controller_manager`: started for the test that asks and stopped after
  it, so no other test's pods get scheduled or collected behind its back.

Every test that uses the server gets the `real_cluster` marker and a timeout
(`REAL_SERVER_TIMEOUT`) on its own body (fixture set-up has its own bounded waits), on top
of the global backstop in pyproject.toml; its own waits say what they waited for and, where
the time depends on the machine's load, end when nothing changes for a while rather than
after a fixed time (phalanx.envtest.wait_until_async `stall`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator

import pytest

REAL_SERVER_TIMEOUT = 120  # seconds per test, server start-up included
_REAL_FIXTURES = {"control_plane", "kube_namespace", "kube_scheduler", "controller_manager",
                  "fake_nodes"}
# The one kind served without a watch cache, so a watch from a compacted version is answered
# by etcd itself (see tests/cluster/kube/test_real_watch.py). CRDs cannot be configured so.
UNCACHED_KIND_FLAG = "--watch-cache-sizes=podtemplates#0"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        param = getattr(getattr(item, "callspec", None), "params", {}).get("client_factory")
        if names & _REAL_FIXTURES or param == "kube-apiserver":
            item.add_marker(pytest.mark.real_cluster)
            if item.get_closest_marker("timeout") is None:
                # The test's own work only: starting the shared control plane or a module's
                # services is bounded by their own waits, and on a loaded machine would eat
                # the budget of whichever test happens to come first.
                item.add_marker(pytest.mark.timeout(REAL_SERVER_TIMEOUT, func_only=True))


@pytest.fixture(scope="session")
def control_plane() -> Iterator[object]:
    from phalanx.envtest import BinariesNotFound, ControlPlane, ControlPlaneOptions, find_binaries

    try:
        binaries = find_binaries()
    except BinariesNotFound as err:
        pytest.skip(str(err))
    plane = ControlPlane.start(binaries=binaries,
                               options=ControlPlaneOptions(apiserver_args=[UNCACHED_KIND_FLAG]))
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def kube_namespace(control_plane: object, request: pytest.FixtureRequest) -> str:
    """A namespace of the test's own on the shared API server (left behind: without the
    controller-manager's namespace controller a deleted namespace only turns Terminating)."""
    return control_plane.create_namespace(request.node.name)  # type: ignore[attr-defined]


@pytest.fixture
def kube_scheduler(control_plane: object) -> Iterator[object]:
    """kube-scheduler 1.36 (GangScheduling on) for this test only."""
    try:
        yield control_plane.start_scheduler()  # type: ignore[attr-defined]
    finally:
        control_plane.stop_scheduler()  # type: ignore[attr-defined]


@pytest.fixture
def controller_manager(control_plane: object) -> Iterator[object]:
    """kube-controller-manager (garbage collector, namespace controller) for this test."""
    try:
        yield control_plane.start_controller_manager()  # type: ignore[attr-defined]
    finally:
        control_plane.stop_controller_manager()  # type: ignore[attr-defined]


@pytest.fixture
def fake_nodes(control_plane: object) -> Iterator[Callable[..., list[str]]]:
    """`fake_nodes(spec_or_count, **gpu_cluster_spec_args)` creates Ready, untainted fake
    Nodes with names unique to the test; all are deleted after it."""
    from phalanx.envtest import create_nodes, delete_nodes, gpu_cluster_spec

    made: list[str] = []

    def make(count: int, **kwargs: object) -> list[str]:
        kwargs.setdefault("name_prefix", f"n{uuid.uuid4().hex[:4]}")
        spec = gpu_cluster_spec(count, **kwargs)  # type: ignore[arg-type]

        async def main() -> list[str]:
            async with control_plane.client() as kube:  # type: ignore[attr-defined]
                return [n.name for n in await create_nodes(kube, spec)]

        names = asyncio.run(main())
        made.extend(names)
        return names

    try:
        yield make
    finally:
        if made:
            async def cleanup() -> None:
                async with control_plane.client() as kube:  # type: ignore[attr-defined]
                    await delete_nodes(kube, made)

            asyncio.run(cleanup())
