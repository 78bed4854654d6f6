"""Fixtures: `client_factory` builds a fresh `Client`. Tests that only use the Client
protocol take it, so the same tests run on every implementation:

- `memory`: MemoryCluster, on virtual time;
- `kube-facade`: KubeCluster over HTTP to a Kubernetes REST facade of a MemoryCluster
  (tests/cluster/kube/facade.py), on virtual time;
- `kube-apiserver`: KubeCluster on the real kube-apiserver of the session (tests/conftest.py),
  on a real event loop. Skipped when no binaries are found.

A test calls `client_factory()` for a client and `client_factory.run(main)` to run its
coroutine on the right loop. `client_factory.real` is true on the real server, where a few
things are only approximately what the embedded clock says (timestamps have one-second
resolution, resourceVersions are the server's, generated names are random).

Tests of embedded-only features (faults, stats, history size) build a MemoryCluster directly;
a contract test whose semantics the real server does not share is marked
`@pytest.mark.embedded_only("why")` and is not run there.

On the real server the contract tests share the namespaces they name (`default`, `a`, ...);
after each test every object of the test kinds in them is deleted (finalizers removed
first), so each test starts from an empty cluster, as on MemoryCluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from phalanx.cluster.client import Client
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

REAL_TEST_TIMEOUT = 60.0  # seconds for one contract test's coroutine on the real server
# Namespaces the contract tests name; created once on the real server.
CONTRACT_NAMESPACES = ("default", "a", "b", "other", "ns", "team", "elsewhere", "x")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Embedded-only contract tests do not run on the real server (deselected, not skipped:
    there is nothing to run)."""
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("client_factory") == "kube-apiserver" and \
                item.get_closest_marker("embedded_only"):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class ClientFactory:
    real = False

    def __init__(self, make: Callable[[], Client]) -> None:
        self._make = make

    def __call__(self) -> Client:
        return self._make()

    def run(self, main: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        return run_virtual(main)


class RealServerFactory(ClientFactory):
    """KubeClusters on the session's API server, closed when `run` ends."""

    real = True

    def __init__(self, plane: Any) -> None:
        self.plane = plane
        self._open: list[Any] = []

    def __call__(self) -> Client:
        kube = self.plane.client(field_manager="phalanx-contract")
        self._open.append(kube)
        return kube

    def run(self, main: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        async def bounded() -> Any:
            try:
                return await asyncio.wait_for(main(), REAL_TEST_TIMEOUT)
            finally:
                for kube in self._open:
                    await kube.close()
                self._open.clear()

        return asyncio.run(bounded())


@pytest.fixture(scope="session")
def contract_server(control_plane: Any) -> Any:
    """The session's API server with the test kinds' CRDs and the contract namespaces."""
    from phalanx.api.crds import crd_for
    from phalanx.envtest import install_crds

    from .kinds import Gadget, Note, Widget

    async def main() -> None:
        async with control_plane.client() as kube:
            widget_crd = crd_for(Widget)
            # CRDs serve field selectors only on declared selectable fields.
            widget_crd["spec"]["versions"][0]["selectableFields"] = [
                {"jsonPath": ".spec.nodeName"}]
            await install_crds(kube, [widget_crd, crd_for(Gadget), crd_for(Note)])

    asyncio.run(main())
    for ns in CONTRACT_NAMESPACES:
        if ns != "default":
            _ensure_namespace(control_plane, ns)
    return control_plane


def _ensure_namespace(plane: Any, name: str) -> None:
    import urllib.error

    from phalanx.envtest.ports import http_post_json

    try:
        http_post_json(f"{plane.server}/api/v1/namespaces",
                       {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                       token=plane.token)
    except urllib.error.HTTPError as err:
        if err.code != 409:
            raise


async def _empty(kube: Any) -> None:
    """Delete every object of the kinds contract tests write, finalizers first."""
    from phalanx.api.core import ConfigMap, Event, Service
    from phalanx.api.pod import Pod
    from phalanx.cluster.client import NotFound

    from .kinds import Gadget, Note, PodTemplate, Widget

    scopes: list[tuple[type, str | None]] = [(Widget, None), (Note, None), (Gadget, None)]
    scopes += [(k, ns) for k in (Pod, ConfigMap, Service, Event, PodTemplate)
               for ns in CONTRACT_NAMESPACES]
    for kind, ns in scopes:
        for obj in (await kube.list(kind, ns)).items:
            if kind is ConfigMap and obj.name == "kube-root-ca.crt":
                continue
            try:
                if obj.metadata.finalizers:
                    await kube.patch(kind, obj.name, {"metadata": {"finalizers": None}},
                                     obj.metadata.namespace)
                if kind is Pod:  # a bound pod waits for its kubelet unless forced
                    await kube.transport.request(
                        "DELETE", f"/api/v1/namespaces/{obj.metadata.namespace}/pods/{obj.name}",
                        body={"apiVersion": "v1", "kind": "DeleteOptions",
                              "gracePeriodSeconds": 0})
                else:
                    await kube.delete(kind, obj.name, obj.metadata.namespace)
            except NotFound:
                pass


@pytest.fixture(params=["memory", "kube-facade", "kube-apiserver"])
def client_factory(request: pytest.FixtureRequest) -> Iterator[ClientFactory]:
    if request.param == "memory":
        yield ClientFactory(MemoryCluster)
        return
    if request.param == "kube-facade":
        from tests.cluster.kube.facade import facade_client

        yield ClientFactory(facade_client)
        return
    plane = request.getfixturevalue("contract_server")
    if request.node.get_closest_marker("garbage_collector"):
        request.getfixturevalue("controller_manager")  # the real server's GC lives there
    try:
        yield RealServerFactory(plane)
    finally:
        async def cleanup() -> None:
            async with plane.client(field_manager="phalanx-contract") as kube:
                await _empty(kube)

        asyncio.run(asyncio.wait_for(cleanup(), 60))
