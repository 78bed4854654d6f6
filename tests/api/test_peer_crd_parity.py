"""Each peer kind's model has exactly the schema of the CRD its peer installs.

The CRDs are those in `../shared/peer-crds` (copied unchanged from KAI, Volcano,
scheduler-plugins and Koordinator; see its README); without that folder the tests skip with
the reason. For every kind, the schema Phalanx generates from the model
(`phalanx.api.crds.crd_for`) is walked beside the peer's `openAPIV3Schema`, node by node:
the same property names, types, required fields, enums, bounds, patterns and defaults, and
the same group, version, kind, plural, scope and status subresource. A node the model leaves
opaque where the peer types it is a difference too.

Not compared: descriptions, `format` (int32/int64 are both JSON integers), shortNames
(several peers call their PodGroup `pg`; Phalanx's CLI resolves `pg` by group instead),
printer columns, list/map types, and CEL rules (`x-kubernetes-validations`): those are
model validators where they concern one object (KAI Topology levels, HyperNode member
selectors; tested below), and the real tier (tests/backends/real) applies the CRDs themselves.

Deliberate differences are listed in DIFFERENCES with the reason; any other one fails.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from phalanx.api.base import Resource
from phalanx.api.crds import crd_for
from phalanx.api.kai_topology import KaiTopology
from phalanx.api.koordinator_topology import ClusterNetworkTopology
from phalanx.api.scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup
from phalanx.api.schedulerplugins import SchedulerPluginsPodGroup
from phalanx.api.volcano_topology import HyperNode
from phalanx.envtest.peer_crds import peer_crds_dir

PEER_CRDS = peer_crds_dir()

# model -> the peer CRD file it must match.
KINDS: dict[type[Resource], str] = {
    KaiPodGroup: "kai/scheduling.run.ai_podgroups.yaml",
    KaiTopology: "kai/kai.scheduler_topologies.yaml",
    VolcanoPodGroup: "volcano/scheduling.volcano.sh_podgroups.yaml",
    HyperNode: "volcano/topology.volcano.sh_hypernodes.yaml",
    CoschedulingPodGroup: "koordinator/scheduling.sigs.k8s.io_podgroups.yaml",
    ClusterNetworkTopology: "koordinator/scheduling.koordinator.sh_clusternetworktopologies.yaml",
    SchedulerPluginsPodGroup: "scheduler-plugins/scheduling.x-k8s.io_podgroups.yaml",
}

_CONDITION_REQUIRED = (
    "type and status are required by Phalanx's Condition model, which every condition writer "
    "shares: a condition without them says nothing, and KAI and Volcano always set both")
# (CRD file, JSON path, aspect) -> why the model differs.
DIFFERENCES: dict[tuple[str, str, str], str] = {
    ("kai/scheduling.run.ai_podgroups.yaml", "$.status.conditions[]", "required"):
        _CONDITION_REQUIRED,
    ("volcano/scheduling.volcano.sh_podgroups.yaml", "$.status.conditions[]", "required"):
        _CONDITION_REQUIRED,
}

# Schema keywords compared as values (when either side has them).
_VALUE_KEYS = ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
               "pattern", "default")


_ZERO: dict[str, Any] = {"integer": 0, "string": "", "boolean": False, "number": 0}


def _peer_crd(path: str) -> dict[str, Any]:
    file = PEER_CRDS / path
    if not PEER_CRDS.is_dir():
        pytest.skip(f"{PEER_CRDS} is absent: the peers' CRDs are not on this machine")
    return yaml.safe_load(file.read_text())


def _kind_of(node: dict[str, Any]) -> str:
    if node.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    if node.get("x-kubernetes-preserve-unknown-fields") and "properties" not in node:
        return "opaque"
    return str(node.get("type", "any"))


def schema_differences(ours: dict[str, Any], theirs: dict[str, Any],
                       path: str = "$") -> list[tuple[str, str, str]]:
    """(path, aspect, detail) for every way `ours` differs from `theirs`."""
    out: list[tuple[str, str, str]] = []
    a, b = _kind_of(ours), _kind_of(theirs)
    if a != b:
        return [(path, "type", f"model {a}, peer {b}")]
    if a == "int-or-string":
        return out  # quantities: the peers add Kubernetes' quantity pattern, we parse them
    for key in _VALUE_KEYS:
        if key == "default" and "default" not in theirs and ours.get(key) == _ZERO.get(a):
            continue  # a model default of Go's zero value: what Go decodes an absent field to
        if ours.get(key) != theirs.get(key):
            out.append((path, key, f"model {ours.get(key)!r}, peer {theirs.get(key)!r}"))
    if sorted(ours.get("enum") or ()) != sorted(theirs.get("enum") or ()):
        out.append((path, "enum", f"model {ours.get('enum')}, peer {theirs.get('enum')}"))
    if set(ours.get("required") or ()) != set(theirs.get("required") or ()):
        out.append((path, "required", f"model {sorted(ours.get('required') or ())}, "
                                      f"peer {sorted(theirs.get('required') or ())}"))
    mine, peer = ours.get("properties") or {}, theirs.get("properties") or {}
    for name in sorted(set(mine) | set(peer)):
        if path == "$" and name in ("apiVersion", "kind", "metadata"):
            continue
        if name not in peer:
            out.append((f"{path}.{name}", "property", "only in the model"))
        elif name not in mine:
            out.append((f"{path}.{name}", "property", "only in the peer's CRD"))
        else:
            out += schema_differences(mine[name], peer[name], f"{path}.{name}")
    if "items" in ours or "items" in theirs:
        out += schema_differences(ours.get("items") or {}, theirs.get("items") or {},
                                  f"{path}[]")
    extra_a, extra_b = ours.get("additionalProperties"), theirs.get("additionalProperties")
    if isinstance(extra_a, dict) or isinstance(extra_b, dict):
        out += schema_differences(extra_a or {}, extra_b or {}, f"{path}{{}}")
    return out


def _version(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    return version


@pytest.mark.parametrize("kind", list(KINDS), ids=lambda k: f"{k.KIND}.{k.API_VERSION}")
def test_the_model_schema_is_the_peer_crd_schema(kind: type[Resource]) -> None:
    path = KINDS[kind]
    theirs = _version(_peer_crd(path))["schema"]["openAPIV3Schema"]
    ours = _version(crd_for(kind))["schema"]["openAPIV3Schema"]
    found = [d for d in schema_differences(ours, theirs) if (path, d[0], d[1]) not in DIFFERENCES]
    assert found == [], "\n".join(f"{p} {aspect}: {detail}" for p, aspect, detail in found)


@pytest.mark.parametrize("kind", list(KINDS), ids=lambda k: f"{k.KIND}.{k.API_VERSION}")
def test_names_scope_and_status_subresource_are_the_peers(kind: type[Resource]) -> None:
    theirs = _peer_crd(KINDS[kind])
    ours = crd_for(kind)
    names = ("kind", "plural", "singular")
    assert {n: ours["spec"]["names"][n] for n in names} == \
        {n: theirs["spec"]["names"][n] for n in names}
    assert (ours["spec"]["group"], ours["spec"]["scope"], _version(ours)["name"]) == \
        (theirs["spec"]["group"], theirs["spec"]["scope"], _version(theirs)["name"])
    has_status = ["status" in (_version(crd).get("subresources") or {}) for crd in (ours, theirs)]
    assert has_status[0] == has_status[1] == kind.HAS_STATUS


def test_every_listed_difference_still_exists() -> None:
    """A difference fixed since must leave the list (so the list stays true)."""
    for path, where, aspect in DIFFERENCES:
        kind = next(k for k, p in KINDS.items() if p == path)
        theirs = _version(_peer_crd(path))["schema"]["openAPIV3Schema"]
        ours = _version(crd_for(kind))["schema"]["openAPIV3Schema"]
        assert (where, aspect) in {d[:2] for d in schema_differences(ours, theirs)}, \
            (path, where, aspect)


def test_the_comparison_finds_a_difference() -> None:
    """The walk itself can fail: a renamed field, a missing bound, an opaque node."""
    theirs = {"type": "object", "properties": {
        "a": {"type": "integer", "minimum": 1},
        "b": {"type": "object", "properties": {"c": {"type": "string"}}}}}
    ours = {"type": "object", "properties": {
        "a": {"type": "integer"},
        "b": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "d": {"type": "string"}}}
    assert schema_differences(ours, theirs) == [
        ("$.a", "minimum", "model None, peer 1"),
        ("$.b", "type", "model opaque, peer object"),
        ("$.d", "property", "only in the model"),
    ]
