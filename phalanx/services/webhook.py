"""Admission webhooks (AdmissionReview v1) that run the same hooks as the embedded cluster.

The operator registers its defaulting and validation in an `AdmissionChain` (what
MemoryCluster calls in-process). Here the API server calls them over HTTPS:

- `POST /mutate`: the chain's mutating hooks; the change goes back as a JSONPatch
  computed against the object exactly as the API server sent it.
- `POST /validate`: the chain's validating hooks; `Invalid` becomes a denial whose status
  carries the field path, so `kubectl apply` shows "spec.x: why".
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from phalanx.api.base import Resource
from phalanx.cluster.admission import AdmissionChain
from phalanx.cluster.client import ApiError, Invalid
from phalanx.cluster.kube.convert import merge_patch, prune
from phalanx.cluster.objects import invalid_from
from phalanx.cluster.objects import merge_patch as apply_merge_patch

log = logging.getLogger("phalanx.webhook")

KindLookup = Callable[[str, str], "type[Resource] | None"]  # (apiVersion, kind) -> class
Observer = Callable[[str, str, bool, float], None]  # (hook, kind, allowed, seconds)


def _pointer(parts: list[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def json_patch(old: Any, new: Any, path: list[str] | None = None) -> list[dict[str, Any]]:
    """RFC 6902 operations turning `old` into `new` (objects recursively, lists whole)."""
    path = path or []
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[dict[str, Any]] = []
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": _pointer([*path, key])})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": _pointer([*path, key]), "value": value})
            elif old[key] != value:
                ops.extend(json_patch(old[key], value, [*path, key]))
        return ops
    if old == new:
        return []
    return [{"op": "replace", "path": _pointer(path), "value": new}]


def _denial(uid: str, err: ApiError) -> dict[str, Any]:
    status: dict[str, Any] = {"code": err.code, "reason": err.reason, "message": err.message}
    if isinstance(err, Invalid) and err.field:
        status["details"] = {"causes": [{"field": err.field, "message": err.message,
                                         "reason": "FieldValueInvalid"}]}
        if err.field not in err.message:
            status["message"] = f"{err.field}: {err.message}"
    return {"uid": uid, "allowed": False, "status": status}


class AdmissionWebhook:
    def __init__(self, chain: AdmissionChain, lookup: KindLookup,
                 observe: Observer | None = None) -> None:
        self.chain = chain
        self.lookup = lookup
        self.observe = observe

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/mutate", self.mutate), web.post("/validate", self.validate)]

    async def mutate(self, request: web.Request) -> web.Response:
        return await self._serve(request, mutating=True)

    async def validate(self, request: web.Request) -> web.Response:
        return await self._serve(request, mutating=False)

    async def _serve(self, request: web.Request, *, mutating: bool) -> web.Response:
        try:
            review = await request.json()
            req = review["request"]
            uid = str(req["uid"])
        except (ValueError, KeyError, TypeError):
            return web.json_response({"message": "expected an admission.k8s.io/v1 "
                                      "AdmissionReview with a request"}, status=400)
        started = time.perf_counter()
        try:
            response = await self.review(req, mutating=mutating)
        except ApiError as err:
            response = _denial(uid, err)
        except Exception as err:  # a bug must not take the API server's writes down silently
            log.exception("admission webhook failed")
            response = _denial(uid, ApiError(f"phalanx admission webhook error: {err}"))
        if self.observe is not None:
            kind = (req.get("kind") or {}).get("kind", "")
            self.observe("mutate" if mutating else "validate", kind,
                         bool(response.get("allowed")), time.perf_counter() - started)
        return web.json_response({"apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
                                  "kind": "AdmissionReview", "response": response})

    def _decode(self, cls: type[Resource], raw: dict[str, Any] | None) -> Resource | None:
        if not raw:
            return None
        try:
            return cls.model_validate(prune(cls, raw))
        except ValidationError as err:
            raise invalid_from(err, cls, (raw.get("metadata") or {}).get("name", "")) from None

    async def review(self, req: dict[str, Any], *, mutating: bool) -> dict[str, Any]:
        uid = str(req["uid"])
        allowed = {"uid": uid, "allowed": True}
        gvk = req.get("kind") or {}
        group, version = gvk.get("group", ""), gvk.get("version", "")
        api_version = f"{group}/{version}" if group else version
        cls = self.lookup(api_version, gvk.get("kind", ""))
        if cls is None or not self.chain.handles(cls) or req.get("operation") == "DELETE":
            return allowed
        raw = req.get("object") or {}
        obj = self._decode(cls, raw)
        old = self._decode(cls, req.get("oldObject"))
        if obj is None:
            return allowed
        if not mutating:
            warnings = await self.chain.validate(obj, old)
            if warnings:  # the API server relays them: kubectl prints "Warning: ..."
                allowed["warnings"] = warnings
            return allowed
        before = obj.to_dict()
        after = (await self.chain.mutate(obj, old)).to_dict()
        change = merge_patch(before, after)
        if not change:
            return allowed
        # Apply our change to the object as sent (with the fields our model prunes), and
        # express the result as a JSONPatch the API server applies to that same object.
        patched = apply_merge_patch(raw, change)
        ops = json_patch(raw, patched)
        allowed["patchType"] = "JSONPatch"
        allowed["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        return allowed
