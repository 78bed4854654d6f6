"""spec.affinity: node affinity and pod (anti-)affinity terms, as kube-apiserver validates
them on pod creation.

Node affinity: required terms are at least one; each requirement's operator decides its
values (In / NotIn at least one, Exists / DoesNotExist none, Gt / Lt exactly one; the API
server does not check that Gt / Lt values are integers); keys are label keys; values of
*required* terms are label values (preferred terms may hold any string); matchFields may only
name `metadata.name`, with In / NotIn and exactly one node name; weights are 1..100.

Pod (anti-)affinity terms: label and namespace selectors well formed, namespaces valid
names (reported at `.namespace`, as the API server does), matchLabelKeys / mismatchLabelKeys
rules, and a topologyKey that is set and a label key.
"""

from __future__ import annotations

from typing import Any

from .fielderrors import (
    FieldErrors,
    dns_label_errors,
    dns_subdomain_errors,
    each_invalid,
    forbidden,
    invalid,
    label_key_errors,
    label_value_errors,
    required,
)
from .labelselector import label_keys_errors, label_selector_errors

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_WEIGHT_RANGE = "must be in the range 1-100"


def affinity_errors(affinity: Any, path: str) -> FieldErrors:
    """Every problem with `spec.affinity` (a phalanx.api.pod.Affinity)."""
    errs: FieldErrors = []
    if affinity.node_affinity is not None:
        errs += node_affinity_errors(affinity.node_affinity, f"{path}.nodeAffinity")
    if affinity.pod_affinity is not None:
        errs += pod_affinity_errors(affinity.pod_affinity, f"{path}.podAffinity")
    if affinity.pod_anti_affinity is not None:
        errs += pod_affinity_errors(affinity.pod_anti_affinity, f"{path}.podAntiAffinity")
    return errs


# ------------------------------------------------------------------------ node affinity


def node_affinity_errors(node_affinity: Any, path: str) -> FieldErrors:
    errs: FieldErrors = []
    required_selector = node_affinity.required_during_scheduling_ignored_during_execution
    if required_selector is not None:
        errs += node_selector_errors(required_selector, f"{path}.{_REQUIRED}")
    for i, term in enumerate(node_affinity.preferred_during_scheduling_ignored_during_execution
                             or ()):
        at = f"{path}.{_PREFERRED}[{i}]"
        if not 1 <= term.weight <= 100:
            errs.append(invalid(f"{at}.weight", term.weight, _WEIGHT_RANGE))
        # Preferred terms may name values no label can have: they simply never match.
        errs += node_selector_term_errors(term.preference, f"{at}.preference",
                                          check_values=False)
    return errs


def node_selector_errors(selector: Any, path: str) -> FieldErrors:
    """A NodeSelector (required node affinity): at least one term, each well formed."""
    terms_path = f"{path}.nodeSelectorTerms"
    if not selector.node_selector_terms:
        return [required(terms_path, "must have at least one node selector term")]
    errs: FieldErrors = []
    for i, term in enumerate(selector.node_selector_terms):
        errs += node_selector_term_errors(term, f"{terms_path}[{i}]", check_values=True)
    return errs


def node_selector_term_errors(term: Any, path: str, *, check_values: bool) -> FieldErrors:
    errs: FieldErrors = []
    for j, req in enumerate(term.match_expressions or ()):
        errs += _expression_errors(req, f"{path}.matchExpressions[{j}]", check_values)
    for j, req in enumerate(term.match_fields or ()):
        errs += _field_errors(req, f"{path}.matchFields[{j}]")
    return errs


def _expression_errors(req: Any, path: str, check_values: bool) -> FieldErrors:
    errs: FieldErrors = []
    op, values = req.operator, req.values or []
    if op in ("In", "NotIn"):
        if not values:
            errs.append(required(f"{path}.values",
                                 "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(f"{path}.values", "may not be specified when `operator` is "
                                                    "'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(required(f"{path}.values", "must be specified single value when "
                                                   "`operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid(f"{path}.operator", op, "not a valid selector operator"))
    errs += each_invalid(f"{path}.key", req.key, label_key_errors(req.key))
    if check_values:
        for k, value in enumerate(values):
            errs += each_invalid(f"{path}.values[{k}]", value, label_value_errors(value))
    return errs


def _field_errors(req: Any, path: str) -> FieldErrors:
    """matchFields: only `metadata.name`, compared with exactly one node name."""
    errs: FieldErrors = []
    values = req.values or []
    if req.operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(required(f"{path}.values", "must be only one value when `operator` is "
                                                   "'In' or 'NotIn' for node field selector"))
    else:
        errs.append(invalid(f"{path}.operator", req.operator, "not a valid selector operator"))
    if req.key != "metadata.name":
        errs.append(invalid(f"{path}.key", req.key, "not a valid field selector key"))
    else:
        for k, value in enumerate(values):
            errs += each_invalid(f"{path}.values[{k}]", value, dns_subdomain_errors(value))
    return errs


# ------------------------------------------------------------------- pod (anti-)affinity


def pod_affinity_errors(affinity: Any, path: str) -> FieldErrors:
    """A podAffinity or podAntiAffinity (kept as the JSON dict the user wrote)."""
    if not isinstance(affinity, dict):
        return [invalid(path, affinity, "must be an object")]
    errs: FieldErrors = []
    for i, term in enumerate(_list(affinity.get(_REQUIRED))):
        errs += pod_affinity_term_errors(term, f"{path}.{_REQUIRED}[{i}]")
    for j, weighted in enumerate(_list(affinity.get(_PREFERRED))):
        at = f"{path}.{_PREFERRED}[{j}]"
        weighted = weighted if isinstance(weighted, dict) else {}
        weight = weighted.get("weight", 0)
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            errs.append(invalid(f"{at}.weight", weight, _WEIGHT_RANGE))
        errs += pod_affinity_term_errors(weighted.get("podAffinityTerm") or {},
                                         f"{at}.podAffinityTerm")
    return errs


def pod_affinity_term_errors(term: Any, path: str) -> FieldErrors:
    if not isinstance(term, dict):
        return [invalid(path, term, "must be a pod affinity term")]
    selector = term.get("labelSelector")
    errs = label_selector_errors(selector, f"{path}.labelSelector")
    errs += label_selector_errors(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for name in _list(term.get("namespaces")):
        errs += each_invalid(f"{path}.namespace", name, dns_label_errors(str(name)))
    errs += label_keys_errors(path, term.get("matchLabelKeys"), term.get("mismatchLabelKeys"),
                              selector)
    key = term.get("topologyKey") or ""
    if not key:
        errs.append(required(f"{path}.topologyKey", "can not be empty"))
    errs += each_invalid(f"{path}.topologyKey", key, label_key_errors(str(key)))
    return errs


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
