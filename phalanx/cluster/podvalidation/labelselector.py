"""metav1.LabelSelector syntax and the matchLabelKeys / mismatchLabelKeys rules, shared by
pod (anti-)affinity terms and topology spread constraints.

Selectors in pod specs are kept as written (JSON dicts, camelCase keys), so these checks read
dicts. A selector is valid when its matchLabels are valid labels and each matchExpressions
entry has a valid key, an operator among In / NotIn / Exists / DoesNotExist, values exactly
when the operator takes them, and (in pod specs) valid label values.
"""

from __future__ import annotations

from typing import Any

from .fielderrors import (
    FieldErrors,
    each_invalid,
    forbidden,
    invalid,
    label_key_errors,
    label_value_errors,
    required,
)

_WITH_VALUES = ("In", "NotIn")
_WITHOUT_VALUES = ("Exists", "DoesNotExist")


def label_map_errors(labels: Any, path: str) -> FieldErrors:
    """A labels map (nodeSelector, matchLabels): every key and value, all reported at `path`."""
    if not labels:
        return []
    if not isinstance(labels, dict):
        return [invalid(path, labels, "must be a map of label keys to values")]
    errs: FieldErrors = []
    for key, value in labels.items():
        errs += each_invalid(path, key, label_key_errors(str(key)))
        if not isinstance(value, str):
            errs.append(invalid(path, value, "label values must be strings"))
            continue
        errs += each_invalid(path, value, label_value_errors(value))
    return errs


def label_selector_errors(selector: Any, path: str) -> FieldErrors:
    """Every problem with one metav1.LabelSelector (None: no selector, nothing to check)."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [invalid(path, selector, "must be a label selector (matchLabels, "
                                        "matchExpressions)")]
    errs = label_map_errors(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(_list(selector.get("matchExpressions"))):
        errs += _requirement_errors(expr if isinstance(expr, dict) else {},
                                    f"{path}.matchExpressions[{i}]")
    return errs


def _requirement_errors(expr: dict[str, Any], path: str) -> FieldErrors:
    errs: FieldErrors = []
    op, values = expr.get("operator") or "", _list(expr.get("values"))
    if op in _WITH_VALUES:
        if not values:
            errs.append(required(f"{path}.values",
                                 "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in _WITHOUT_VALUES:
        if values:
            errs.append(forbidden(f"{path}.values", "may not be specified when `operator` is "
                                                    "'Exists' or 'DoesNotExist'"))
    else:
        errs.append(invalid(f"{path}.operator", op, "not a valid selector operator"))
    key = expr.get("key") or ""
    errs += each_invalid(f"{path}.key", key, label_key_errors(str(key)))
    for j, value in enumerate(values):
        errs += each_invalid(f"{path}.values[{j}]", value, label_value_errors(str(value)))
    return errs


def label_keys_errors(path: str, match_keys: Any, mismatch_keys: Any,
                      selector: Any) -> FieldErrors:
    """matchLabelKeys / mismatchLabelKeys of a term at `path`, checked against its (already
    merged) labelSelector: valid label keys, only with a selector, a matchLabelKeys key not
    also written in the selector, and no key in both lists."""
    match, mismatch = _list(match_keys), _list(mismatch_keys)
    errs: FieldErrors = []
    for name, keys in (("matchLabelKeys", match), ("mismatchLabelKeys", mismatch)):
        if not keys:
            continue
        if selector is None:
            errs.append(forbidden(f"{path}.{name}",
                                  "must not be specified when labelSelector is not set"))
            continue
        for i, key in enumerate(keys):
            errs += each_invalid(f"{path}.{name}[{i}]", key, label_key_errors(str(key)))
    if isinstance(selector, dict) and match:
        # At creation the API server appends `key In (value)` for each matchLabelKeys key the
        # pod carries; a key the selector already names is then seen twice.
        index = {key: i for i, key in enumerate(match) if isinstance(key, str)}
        seen = set(selector.get("matchLabels") or ())
        for expr in _list(selector.get("matchExpressions")):
            key = expr.get("key") if isinstance(expr, dict) else None
            if not isinstance(key, str):
                continue
            if key in index and key in seen:
                errs.append(invalid(f"{path}[{index[key]}]", key,
                                    "exists in both matchLabelKeys and labelSelector"))
            seen.add(key)
    if match and mismatch:
        mismatched = set(map(str, mismatch))
        errs += [invalid(f"{path}.matchLabelKeys[{i}]", key,
                         "exists in both matchLabelKeys and mismatchLabelKeys")
                 for i, key in enumerate(match) if key in mismatched]
    return errs


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
