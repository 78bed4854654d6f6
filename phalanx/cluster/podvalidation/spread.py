"""spec.topologySpreadConstraints, as kube-apiserver 1.36 validates them on pod creation.

maxSkew > 0; topologyKey set; whenUnsatisfiable DoNotSchedule or ScheduleAnyway; no two
constraints with the same {topologyKey, whenUnsatisfiable}; minDomains > 0 and only with
DoNotSchedule; nodeAffinityPolicy / nodeTaintsPolicy Honor or Ignore; matchLabelKeys valid
keys, only with a labelSelector and not already in it (1.36 merges matchLabelKeys into the
selector when the pod is created, then checks); the labelSelector well formed.
"""

from __future__ import annotations

from typing import Any

from .fielderrors import FieldErrors, duplicate, invalid, not_supported, required
from .labelselector import label_keys_errors, label_selector_errors

_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_POLICIES = ("Honor", "Ignore")
_NOT_POSITIVE = "must be greater than zero"


def spread_errors(constraints: Any, path: str) -> FieldErrors:
    if not isinstance(constraints, list):
        return [invalid(path, constraints, "must be a list of topology spread constraints")]
    items = [c if isinstance(c, dict) else {} for c in constraints]
    errs: FieldErrors = []
    for i, c in enumerate(items):
        at = f"{path}[{i}]"
        skew = c.get("maxSkew", 0)
        if not _positive(skew):
            errs.append(invalid(f"{at}.maxSkew", skew, _NOT_POSITIVE))
        key, action = c.get("topologyKey") or "", c.get("whenUnsatisfiable") or ""
        if not key:
            errs.append(required(f"{at}.topologyKey", "can not be empty"))
        if action not in _ACTIONS:
            errs.append(not_supported(f"{at}.whenUnsatisfiable", action, _ACTIONS))
        if any((o.get("topologyKey") or "") == key and (o.get("whenUnsatisfiable") or "") == action
               for o in items[i + 1:]):
            errs.append(duplicate(f"{at}.{{topologyKey, whenUnsatisfiable}}",
                                  f"{{{key}, {action}}}"))
        min_domains = c.get("minDomains")
        if min_domains is not None:
            if not _positive(min_domains):
                errs.append(invalid(f"{at}.minDomains", min_domains, _NOT_POSITIVE))
            if action != "DoNotSchedule":
                errs.append(invalid(f"{at}.minDomains", min_domains,
                                    "can only use minDomains if whenUnsatisfiable="
                                    f"DoNotSchedule, not {action}"))
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            value = c.get(policy)
            if value is not None and value not in _POLICIES:
                errs.append(not_supported(f"{at}.{policy}", value, _POLICIES))
        selector = c.get("labelSelector")
        errs += label_keys_errors(at, c.get("matchLabelKeys"), None, selector)
        errs += label_selector_errors(selector, f"{at}.labelSelector")
    return errs


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
