"""Phalanx's CRDs and Grove's stay one API (issue 22 item 5).

Every field of Grove's CRD schemas (ai-dynamo/grove, as copied into ../shared/peer-crds/grove)
is compared with the CRD Phalanx generates from its models (phalanx.api.crds, so the models
are what is compared): each schema node's type, format, required fields, enum, pattern,
bounds, default, openness (x-kubernetes-preserve-unknown-fields), keyed-list markers and CEL
rules (x-kubernetes-validations), plus each kind's names, scope and subresources and its
printer columns. A difference fails the test unless docs/real-cluster.md lists it, with the
reason, in its table between the `grove-crd-differences` markers; a listed difference that no
longer exists fails too, so the table stays true. Skipped, with the reason, when Grove's CRDs
are absent.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.api.crds import GROVE_CRD_KINDS, crd_for

REPO = Path(__file__).resolve().parents[2]
PEER = REPO.parent / "shared" / "peer-crds" / "grove"
DOC = REPO / "docs" / "real-cluster.md"
KEYWORDS = ("type", "format", "required", "enum", "pattern", "minLength", "maxLength",
            "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems",
            "maxItems", "default", "nullable", "x-kubernetes-preserve-unknown-fields",
            "x-kubernetes-int-or-string", "x-kubernetes-list-type",
            "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-validations")


def _grove_crds() -> dict[str, dict[str, Any]]:
    if not PEER.is_dir():
        pytest.skip(f"Grove's CRDs are not beside the checkout ({PEER} is absent)")
    found = {}
    for path in sorted(PEER.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                found[doc["spec"]["names"]["kind"]] = doc
    return found


def _nodes(schema: dict[str, Any], path: str = "") -> dict[str, dict[str, Any]]:
    """Every schema node by path (`spec.template.cliques[].name`, `` for the root)."""
    out = {path: schema}
    for name, sub in (schema.get("properties") or {}).items():
        out.update(_nodes(sub, f"{path}.{name}" if path else name))
    if isinstance(schema.get("items"), dict):
        out.update(_nodes(schema["items"], f"{path}[]"))
    if isinstance(schema.get("additionalProperties"), dict):
        out.update(_nodes(schema["additionalProperties"], f"{path}{{}}"))
    return out


def _facts(node: dict[str, Any]) -> dict[str, Any]:
    facts = {k: node[k] for k in KEYWORDS if k in node}
    if "required" in facts:
        facts["required"] = sorted(facts["required"])
    return facts


def _version(crd: dict[str, Any]) -> dict[str, Any]:
    [version] = crd["spec"]["versions"]
    return version


def differences() -> list[tuple[str, str, str]]:
    """(kind, field, what differs) between Grove's CRDs and Phalanx's."""
    grove = _grove_crds()
    ours = {cls.KIND: crd_for(cls) for cls in GROVE_CRD_KINDS}
    out: list[tuple[str, str, str]] = []
    for kind in sorted(set(grove) | set(ours)):
        if kind not in grove or kind not in ours:
            out.append((kind, "(kind)", f"only in {'Phalanx' if kind in ours else 'Grove'}"))
            continue
        g, o = grove[kind], ours[kind]
        for key in ("group", "scope"):
            if g["spec"][key] != o["spec"][key]:
                out.append((kind, f"({key})", f"{g['spec'][key]} != {o['spec'][key]}"))
        for key in ("plural", "singular", "listKind", "shortNames"):
            if g["spec"]["names"].get(key) != o["spec"]["names"].get(key):
                out.append((kind, "(names)", f"{key} differs"))
        gv, ov = _version(g), _version(o)
        if (gv["name"], gv.get("subresources")) != (ov["name"], ov.get("subresources")):
            out.append((kind, "(subresources)", "version or subresources differ"))
        columns = [[(c["name"], c["jsonPath"], c.get("type"), c.get("priority", 0))
                    for c in v.get("additionalPrinterColumns", [])] for v in (gv, ov)]
        if columns[0] != columns[1]:
            out.append((kind, "(printer columns)",
                        f"{[c[0] for c in columns[0]]} != {[c[0] for c in columns[1]]}"))
        gn = _nodes(gv["schema"]["openAPIV3Schema"])
        on = _nodes(ov["schema"]["openAPIV3Schema"])
        for path in sorted(set(gn) | set(on)):
            if path not in gn or path not in on:
                out.append((kind, path or "(root)",
                            f"only in {'Phalanx' if path in on else 'Grove'}"))
                continue
            gf, of = _facts(gn[path]), _facts(on[path])
            for key in sorted(set(gf) | set(of)):
                if gf.get(key) != of.get(key):
                    out.append((kind, path or "(root)",
                                f"{key}: Grove {gf.get(key)!r}, Phalanx {of.get(key)!r}"))
    return out


def documented() -> list[tuple[str, str, str]]:
    """(kind, field pattern, why) rows of the table in docs/real-cluster.md. A field ending
    in `.**` covers that node and everything below it."""
    text = DOC.read_text()
    match = re.search(r"<!-- grove-crd-differences:start -->(.*?)"
                      r"<!-- grove-crd-differences:end -->", text, re.S)
    assert match, f"{DOC} has no grove-crd-differences table"
    rows = []
    for line in match.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("kind", "") or set(cells[0]) <= {"-", " "}:
            continue
        rows.append((cells[0], cells[1].strip("`"), cells[-1]))
    return rows


def _covers(pattern: str, path: str) -> bool:
    if pattern.endswith(".**"):
        root = pattern[:-3]
        return path == root or path.startswith((root + ".", root + "[", root + "{"))
    return pattern == path


def test_every_difference_from_grove_is_documented_with_its_reason() -> None:
    rows = documented()
    assert all(why for *_, why in rows), "every documented difference says why"
    missing = [d for d in differences()
               if not any(kind == d[0] and _covers(pattern, d[1]) for kind, pattern, _ in rows)]
    assert not missing, (
        "differences from Grove's CRDs not listed in docs/real-cluster.md:\n"
        + "\n".join(f"  {k} {p}: {what}" for k, p, what in missing))


def test_every_documented_difference_still_exists() -> None:
    found = differences()
    stale = [(kind, pattern) for kind, pattern, _ in documented()
             if not any(kind == k and _covers(pattern, p) for k, p, _ in found)]
    assert not stale, f"docs/real-cluster.md lists differences that are gone: {stale}"


def test_the_comparison_sees_a_difference() -> None:
    """The comparison itself can fail: a required field Grove has that a model dropped."""
    grove = _grove_crds()
    schema = _version(grove["PodClique"])["schema"]["openAPIV3Schema"]
    ours = _version(crd_for(next(c for c in GROVE_CRD_KINDS if c.KIND == "PodClique")))
    spec = ours["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert sorted(spec["required"]) == sorted(schema["properties"]["spec"]["required"])
    assert "roleName" in spec["required"]
