"""Node selectors as kube-scheduler reads them (component-helpers' nodeaffinity package).

A term ANDs its `matchExpressions` (label requirements) and `matchFields` (only
`metadata.name`, one value, In/NotIn); a selector ORs its terms; a term with neither
matches no node. A term that does not parse (an invalid label key or value, In without
values, Gt with a non-integer...) matches no node either: the required selector ignores it
quietly, while preferred terms and plugin args report it, as kube does.

Every requirement works two ways from one parse: on snapshot rows, vectorised over the
interned label columns (`mask`), and on a Node object (`matches_node`), for queueing hints.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from phalanx.api.core import (
        Node,
        NodeSelector,
        NodeSelectorRequirement,
        NodeSelectorTerm,
        PreferredSchedulingTerm,
    )
    from phalanx.scheduler.snapshot import Snapshot

OBJECT_NAME_FIELD = "metadata.name"
_INT64 = (-(2**63), 2**63 - 1)

# --- label syntax, with apimachinery's messages (they reach users in errors) ---------------

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_RE = re.compile(f"^{_LABEL_KEY_FMT}$")
_LABEL_VALUE_RE = re.compile(f"^({_LABEL_KEY_FMT})?$")
_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DECIMAL_RE = re.compile(r"^[+-]?[0-9]+$")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def label_key_errors(key: str) -> list[str]:
    """Why `key` is not a label key / qualified name (apimachinery's IsLabelKey)."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN_RE.match(prefix):
                errs.append(
                    "prefix part "
                    + _regex_error(_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com")
                )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _LABEL_KEY_RE.match(name):
        errs.append(
            "name part " + _regex_error(_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            _regex_error(_VALUE_MSG, f"({_LABEL_KEY_FMT})?", "MyValue", "my_value", "12345")
        )
    return errs


def parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64), or None."""
    if not _DECIMAL_RE.match(text):
        return None
    v = int(text)
    return v if _INT64[0] <= v <= _INT64[1] else None


def _invalid(path: str, value: Any, detail: str) -> str:
    shown = json.dumps(value) if not isinstance(value, int) else str(value)
    return f"{path}: Invalid value: {shown}: {detail}"


# --- requirements ----------------------------------------------------------------------------

Mask = Callable[["Snapshot", np.ndarray], np.ndarray]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One parsed requirement. `field` requirements compare the node's name."""

    key: str
    op: str
    values: tuple[str, ...]
    field: bool = False
    bound: int = 0  # Gt/Lt

    def matches_node(self, labels: Mapping[str, str], name: str) -> bool:
        if self.field:
            got = name if self.key == OBJECT_NAME_FIELD else ""
            return (got == self.values[0]) == (self.op == "In")
        value = labels.get(self.key)
        if self.op == "In":
            return value is not None and value in self.values
        if self.op == "NotIn":
            return value is None or value not in self.values
        if self.op == "Exists":
            return value is not None
        if self.op == "DoesNotExist":
            return value is None
        number = parse_int64(value) if value is not None else None
        if number is None:
            return False
        return number > self.bound if self.op == "Gt" else number < self.bound

    def mask(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        if self.field:
            if self.key == OBJECT_NAME_FIELD:
                hit = idx == snap.index.get(self.values[0], -1)
            else:
                hit = np.full(idx.size, self.values[0] == "")
            return hit if self.op == "In" else ~hit
        col = snap.label_column(self.key)[idx]
        if self.op in ("In", "NotIn"):
            ids = [snap.label_value_id(self.key, v) for v in self.values]
            hit = np.isin(col, ids)
            return hit if self.op == "In" else ~hit
        if self.op in ("Exists", "DoesNotExist"):
            present = col != 0
            return present if self.op == "Exists" else ~present
        valid, numbers = _numeric_ids(snap, self.key)
        ok = valid[col]
        return ok & (numbers[col] > self.bound if self.op == "Gt" else numbers[col] < self.bound)


def _numeric_ids(snap: Snapshot, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Per label value id of `key` (0 = absent): whether it is an int64, and its value."""
    values = snap.label_values(key)
    valid = np.zeros(len(values) + 1, dtype=bool)
    numbers = np.zeros(len(values) + 1, dtype=np.int64)
    for text, vid in values.items():
        n = parse_int64(text)
        if n is not None:
            valid[vid], numbers[vid] = True, n
    return valid, numbers


def _label_requirement(
    req: NodeSelectorRequirement, path: str
) -> tuple[Requirement | None, list[str]]:
    key, op, values = req.key, req.operator, list(req.values or ())
    key_errors = label_key_errors(key)
    errs = [_invalid(f"{path}.key", key, "; ".join(key_errors))] if key_errors else []
    bound = 0
    if op in ("In", "NotIn"):
        if not values:
            errs.append(
                _invalid(
                    f"{path}.values",
                    values,
                    "for 'in', 'notin' operators, values set can't be empty",
                )
            )
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                _invalid(
                    f"{path}.values",
                    values,
                    "values set must be empty for exists and does not exist",
                )
            )
    else:  # Gt, Lt (the API model admits no other operator)
        if len(values) != 1:
            errs.append(
                _invalid(
                    f"{path}.values",
                    values,
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for i, v in enumerate(values):
            n = parse_int64(v)
            if n is None:
                errs.append(
                    _invalid(
                        f"{path}.values[{i}]",
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
            elif i == 0:
                bound = n
    for i, v in enumerate(values):
        e = label_value_errors(v)
        if e:
            errs.append(_invalid(f"{path}.values[{i}][{key}]", v, "; ".join(e)))
    if errs:
        return None, errs
    return Requirement(key, op, tuple(values), False, bound), []


def _field_requirement(
    req: NodeSelectorRequirement, path: str
) -> tuple[Requirement | None, list[str]]:
    values = list(req.values or ())
    if req.operator not in ("In", "NotIn"):
        return None, [
            f'{path}.operator: Unsupported value: "{req.operator}": supported values: "In", "NotIn"'
        ]
    if len(values) != 1:
        return None, [_invalid(f"{path}.values", values, "must have one element")]
    return Requirement(req.key, req.operator, (values[0],), True), []


# --- terms and selectors -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Term:
    """A parsed NodeSelectorTerm: all requirements must hold. `errors`: it never matches."""

    requirements: tuple[Requirement, ...] = ()
    errors: tuple[str, ...] = ()

    def matches_node(self, node: Node) -> bool:
        if self.errors:
            return False
        labels, name = node.metadata.labels, node.metadata.name or ""
        for r in self.requirements:
            if r.field and not name:
                continue  # kube matches fields only against a node with a name
            if not r.matches_node(labels, name):
                return False
        return True

    def mask(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        if self.errors:
            return np.zeros(idx.size, dtype=bool)
        out = np.ones(idx.size, dtype=bool)
        for r in self.requirements:
            m = r.mask(snap, idx)
            if r.field:
                m |= idx == snap.index.get("", -1)  # an unnamed node has no fields to check
            out &= m
        return out


def is_empty_term(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def parse_term(term: NodeSelectorTerm, path: str = "") -> Term:
    reqs: list[Requirement] = []
    errs: list[str] = []
    for name, items, parse in (
        ("matchExpressions", term.match_expressions, _label_requirement),
        ("matchFields", term.match_fields, _field_requirement),
    ):
        for i, req in enumerate(items or ()):
            r, e = parse(req, f"{path}.{name}[{i}]" if path else f"{name}[{i}]")
            errs += e
            if r is not None:
                reqs.append(r)
    return Term(tuple(reqs), tuple(errs))


@dataclass(frozen=True, slots=True)
class Selector:
    """A NodeSelector: terms ORed. Empty terms are dropped (they match nothing)."""

    terms: tuple[Term, ...] = ()

    @property
    def errors(self) -> list[str]:
        return [e for t in self.terms for e in t.errors]

    def matches_node(self, node: Node) -> bool:
        return any(t.matches_node(node) for t in self.terms)

    def mask(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        out = np.zeros(idx.size, dtype=bool)
        for t in self.terms:
            out |= t.mask(snap, idx)
        return out


def parse_selector(selector: NodeSelector, path: str = "") -> Selector:
    base = f"{path}.nodeSelectorTerms" if path else "nodeSelectorTerms"
    return Selector(
        tuple(
            parse_term(t, f"{base}[{i}]")
            for i, t in enumerate(selector.node_selector_terms)
            if not is_empty_term(t)
        )
    )


@dataclass(frozen=True, slots=True)
class Preferred:
    """Weighted terms (zero weights and empty terms dropped); a node scores the sum of the
    weights of the terms it matches."""

    terms: tuple[tuple[int, Term], ...] = ()
    errors: tuple[str, ...] = field(default=())

    def score_node(self, node: Node) -> int:
        return sum(w for w, t in self.terms if t.matches_node(node))

    def scores(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        total = np.zeros(idx.size, dtype=np.float64)
        for w, t in self.terms:
            total += w * t.mask(snap, idx)
        return total


def parse_preferred(terms: Sequence[PreferredSchedulingTerm] | None, path: str = "") -> Preferred:
    parsed: list[tuple[int, Term]] = []
    errs: list[str] = []
    for i, p in enumerate(terms or ()):
        if not p.weight or is_empty_term(p.preference):
            continue
        t = parse_term(p.preference, f"{path}[{i}]")
        if t.errors:
            errs += t.errors
        else:
            parsed.append((int(p.weight), t))
    return Preferred(tuple(parsed), tuple(errs))


def format_errors(errors: Sequence[str]) -> str:
    """One error as is, several as apimachinery's aggregate prints them."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


@dataclass(frozen=True, slots=True)
class RequiredAffinity:
    """spec.nodeSelector AND spec.affinity.nodeAffinity.required (kube's
    RequiredNodeAffinity): both must hold when present."""

    node_selector: tuple[tuple[str, str], ...] = ()
    selector: Selector | None = None

    def matches_node(self, node: Node) -> bool:
        labels = node.metadata.labels
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        return self.selector is None or self.selector.matches_node(node)

    def mask(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        out = np.ones(idx.size, dtype=bool)
        for k, v in self.node_selector:
            out &= snap.label_column(k)[idx] == snap.label_value_id(k, v)
        if self.selector is not None:
            out &= self.selector.mask(snap, idx)
        return out


def required_affinity(spec: Any) -> RequiredAffinity:
    """The pod's required node affinity (spec.nodeSelector and the required terms)."""
    na = spec.affinity.node_affinity if spec.affinity else None
    req = na.required_during_scheduling_ignored_during_execution if na else None
    return RequiredAffinity(
        tuple(sorted((spec.node_selector or {}).items())),
        parse_selector(req) if req is not None else None,
    )
