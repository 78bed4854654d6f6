"""Installing CustomResourceDefinitions and waiting until the server serves them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from phalanx.cluster.client import NotFound

from .wait import Pending, wait_until_async

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def install_crds(kube: Any, crds: Iterable[dict[str, Any]], *, timeout: float = 60.0,
                       field_manager: str = "phalanx-envtest") -> list[str]:
    """Server-side apply each CRD, then wait until every one is Established and its
    resource appears in discovery (the point from which creates of it succeed). Returns
    the CRD names."""
    names = []
    for crd in crds:
        name = crd["metadata"]["name"]
        await kube.transport.request(
            "PATCH", f"{CRD_PATH}/{name}", body=crd,
            query=[("fieldManager", field_manager), ("force", "true"),
                   ("fieldValidation", "Strict")],
            content_type="application/apply-patch+yaml", kind="CustomResourceDefinition",
            name=name)
        names.append((name, crd))
    for name, crd in names:
        await wait_until_async(lambda n=name, c=crd: _served(kube, n, c), timeout,
                               what=f"CRD {name} Established and served", interval=0.2)
    return [n for n, _ in names]


async def _served(kube: Any, name: str, crd: dict[str, Any]) -> object:
    live = await kube.transport.request("GET", f"{CRD_PATH}/{name}")
    conditions = {c.get("type"): c.get("status")
                  for c in (live.get("status") or {}).get("conditions") or ()}
    if conditions.get("Established") != "True":
        return Pending(f"conditions {conditions}")
    group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
    for version in crd["spec"]["versions"]:
        if not version.get("served", True):
            continue
        try:
            found = await kube.transport.request("GET", f"/apis/{group}/{version['name']}")
        except NotFound:
            return Pending(f"/apis/{group}/{version['name']} not in discovery yet")
        if not any(r.get("name") == plural for r in found.get("resources") or ()):
            return Pending(f"{plural} not in /apis/{group}/{version['name']} yet")
    return True


async def uninstall_crds(kube: Any, names: Iterable[str]) -> None:
    for name in names:
        try:
            await kube.transport.request("DELETE", f"{CRD_PATH}/{name}")
        except NotFound:
            pass
