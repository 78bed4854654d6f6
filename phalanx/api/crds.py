"""CustomResourceDefinitions (apiextensions.k8s.io/v1) generated from the pydantic models.

The OpenAPI v3 schemas are structural, as the API server requires: every `$ref` inlined,
every node typed, camelCase names, only keywords Kubernetes accepts, opaque maps as
`x-kubernetes-preserve-unknown-fields`, quantities as int-or-string. Pod specs embedded in
cliques also preserve unknown fields, so fields newer than our models survive a real server.
Status conditions get metav1.Condition's schema, and the CRD-only facts the models carry
(formats, server defaults, keyed lists, CEL rules: crdtypes.py) are kept, so the Grove CRDs
generated here hold Grove's own schema (tests/api/test_grove_crd_parity.py).
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from .base import Resource
from .crdtypes import METAV1_CONDITION
from .grove import (
    ClusterTopology,
    ClusterTopologyBinding,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueSet,
    PodGang,
)

# What `phalanx manifests crds` installs: Grove's kinds, and the legacy ClusterTopology
# (read where no ClusterTopologyBinding of its name exists; no short name, so it installs
# beside Grove's ClusterTopologyBinding CRD).
GROVE_CRD_KINDS: tuple[type[Resource], ...] = (
    PodCliqueSet,
    PodClique,
    PodCliqueScalingGroup,
    ClusterTopologyBinding,
    ClusterTopology,
    PodGang,
)
# Definitions replaced by the schema Kubernetes declares for them.
_KUBERNETES_DEFS = {"Condition": METAV1_CONDITION}

# Definitions whose objects also keep fields we do not model (Kubernetes' own types).
_PRESERVE_UNKNOWN_DEFS = {"PodSpec", "Container"}
# Keywords a CRD schema may carry (JSONSchemaProps); everything else is dropped.
_ALLOWED = {
    "type", "format", "description", "properties", "items", "required", "enum",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "pattern", "minItems", "maxItems", "additionalProperties", "default", "anyOf",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string", "nullable",
    "x-kubernetes-validations", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
}  # fmt: skip
# CRD-only keywords a model carries in json_schema_extra (crdtypes.py), copied as they are.
_CRD_EXTRAS = ("x-kubernetes-validations", "x-kubernetes-list-type", "x-kubernetes-list-map-keys")


def crd_for(cls: type[Resource]) -> dict[str, Any]:
    """The CRD of one kind, as a dict ready for YAML or the API."""
    group, _, version = cls.API_VERSION.rpartition("/")
    if not group:
        raise ValueError(f"{cls.KIND} is a core kind; it has no CRD")
    schema = openapi_schema(cls)
    entry: dict[str, Any] = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
    }
    subresources: dict[str, Any] = {}
    if cls.HAS_STATUS:
        subresources["status"] = {}
    scale = getattr(cls, "SCALE", None)
    if scale:
        subresources["scale"] = dict(scale)
    if subresources:
        entry["subresources"] = subresources
    columns = getattr(cls, "PRINTER_COLUMNS", ())
    if columns:
        entry["additionalPrinterColumns"] = [dict(c) for c in columns]
    names: dict[str, Any] = {
        "kind": cls.KIND,
        "listKind": f"{cls.KIND}List",
        "plural": cls.PLURAL,
        "singular": cls.KIND.lower(),
    }
    if cls.SHORT_NAMES:
        names["shortNames"] = list(cls.SHORT_NAMES)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{cls.PLURAL}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Namespaced" if cls.NAMESPACED else "Cluster",
            "versions": [entry],
        },
    }


def crds(kinds: tuple[type[Resource], ...] = GROVE_CRD_KINDS) -> list[dict[str, Any]]:
    return [crd_for(k) for k in kinds]


def crds_yaml(kinds: tuple[type[Resource], ...] = GROVE_CRD_KINDS) -> str:
    """Every CRD as one multi-document YAML stream (for `kubectl apply -f -`)."""
    return "---\n".join(
        yaml.safe_dump(c, sort_keys=False, default_flow_style=False, allow_unicode=True)
        for c in crds(kinds)
    )


def openapi_schema(cls: type[Resource]) -> dict[str, Any]:
    """The structural openAPIV3Schema of a kind."""
    raw = cls.model_json_schema(by_alias=True, mode="validation")
    defs = raw.get("$defs", {})
    root = _convert(raw, defs, ())
    props = root.setdefault("properties", {})
    # The API server owns metadata's schema; apiVersion/kind are plain strings.
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {"type": "object"}
    root["required"] = [r for r in root.get("required", []) if r not in ("apiVersion", "kind")]
    if not root["required"]:
        del root["required"]
    return root


def _convert(node: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    node = dict(node)
    preserve = False
    # Inline references (pydantic puts siblings like `description` next to `$ref`).
    while "$ref" in node:
        name = node.pop("$ref").rsplit("/", 1)[-1]
        if name in _KUBERNETES_DEFS:
            return copy.deepcopy(_KUBERNETES_DEFS[name])
        if name in seen:
            raise ValueError(f"recursive schema through {name} cannot be made structural")
        seen = (*seen, name)
        preserve = preserve or name in _PRESERVE_UNKNOWN_DEFS
        node = {**defs[name], **node}
    if "allOf" in node and len(node["allOf"]) == 1:
        node = {**node.pop("allOf")[0], **node}
        return _convert(node, defs, seen)
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if len(options) == 1:
            return _convert({**options[0], **rest}, defs, seen)
        types = {o.get("type") for o in options}
        if types <= {"string", "integer", "number"} and "string" in types:
            # A quantity (or any int-or-string): the form Kubernetes uses.
            out = {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            }
            return _finish(out, rest)
        raise ValueError(f"cannot express union {options} structurally")
    if "const" in node:
        node["enum"] = [node.pop("const")]
    out: dict[str, Any] = {}
    if node.get("type") == "object" or "properties" in node:
        out["type"] = "object"
        props = node.get("properties")
        if props:
            out["properties"] = {k: _convert(v, defs, seen) for k, v in props.items()}
            if node.get("required"):
                out["required"] = list(node["required"])
            if preserve:
                out["x-kubernetes-preserve-unknown-fields"] = True
        else:
            extra = node.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                out["additionalProperties"] = _convert(extra, defs, seen)
            elif props is None:
                # dict[str, Any]: an opaque object kept as written.
                out["x-kubernetes-preserve-unknown-fields"] = True
            else:
                out["properties"] = {}
    elif node.get("type") == "array":
        out["type"] = "array"
        out["items"] = _convert(node.get("items", {}), defs, seen)
    elif "type" in node:
        out["type"] = node["type"]
    else:  # Any: keep whatever is there
        out["x-kubernetes-preserve-unknown-fields"] = True
    return _finish(out, node)


def _finish(out: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    for key in ("format", "description", "enum", "pattern", "minimum", "maximum", "minLength",
                "maxLength", "minItems", "maxItems", *_CRD_EXTRAS):  # fmt: skip
        if node.get(key) is not None and key not in out:  # None: left out (crdtypes)
            out[key] = copy.deepcopy(node[key])
    # JSON Schema 2020 numeric exclusive bounds -> OpenAPI v3.0 booleans.
    for bound, flag in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(node.get(bound), int | float) and not isinstance(node.get(bound), bool):
            out[flag] = node[bound]
            out[bound] = True
    # Scalar defaults only (the server applies them); collections default to absent.
    default = node.get("default")
    if isinstance(default, str | int | float | bool) and default in out.get("enum", [default]):
        out["default"] = default
    if out.get("type") == "string" and "enum" in out:
        out["enum"] = [e for e in out["enum"] if e is not None]
    unknown = set(out) - _ALLOWED
    if unknown:
        raise AssertionError(f"unsupported schema keywords {unknown}")
    return out
