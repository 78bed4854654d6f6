"""Applying a stream of manifests as `kubectl apply --server-side --validate=strict` does:
server-side apply of each document with strict field validation (optionally a server-side
dry run), resolving each kind's REST path through discovery.

kubectl itself cannot do this against the shipped kube-apiserver v1.36 build: that server
answers 503 to the protobuf /openapi/v2 that kubectl reads before sending (its log says
"Error in OpenAPI handler: [1,1] $root has invalid property: Extensions"), while the JSON
form and /openapi/v3 are fine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .wait import wait_until_async


async def _resource(kube: Any, api_version: str, kind: str) -> tuple[str, bool]:
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    found = await kube.transport.request("GET", base)
    for res in found.get("resources") or ():
        if res.get("kind") == kind and "/" not in res.get("name", ""):
            return f"{base}/{{ns}}{res['name']}", bool(res.get("namespaced"))
    raise LookupError(f"{api_version} {kind} is not served")


async def apply_documents(kube: Any, docs: Iterable[dict[str, Any]], *, dry_run: bool = False,
                          field_manager: str = "phalanx-install",
                          discovery_timeout: float = 30.0) -> list[dict[str, Any]]:
    """Server-side apply each document in order (a CRD before its custom resources: a kind
    not yet in discovery is waited for). Raises the server's error for the first refusal."""
    out = []
    for doc in docs:
        api_version, kind = doc["apiVersion"], doc["kind"]
        path, namespaced = await wait_until_async(
            lambda: _resource(kube, api_version, kind), discovery_timeout,
            what=f"{api_version} {kind} in discovery", interval=0.2)
        meta = doc.get("metadata") or {}
        ns = f"namespaces/{meta.get('namespace') or 'default'}/" if namespaced else ""
        query = [("fieldManager", field_manager), ("fieldValidation", "Strict"),
                 ("force", "true")]
        if dry_run:
            query.append(("dryRun", "All"))
        out.append(await kube.transport.request(
            "PATCH", path.format(ns=ns) + "/" + meta["name"], body=doc, query=query,
            content_type="application/apply-patch+yaml", kind=kind, name=meta["name"]))
    return out
