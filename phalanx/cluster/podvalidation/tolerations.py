"""spec.tolerations, as kube-apiserver 1.36 validates them.

A key, when set, is a label key; an empty key tolerates every taint and so needs operator
Exists; tolerationSeconds only makes sense for NoExecute; operator Equal (or unset) needs a
label value, Exists no value. The comparison operators Lt / Gt sit behind an alpha feature
gate that 1.36 leaves off, so they are unsupported (the Toleration model refuses them before
this runs, naming `spec.tolerations[i].operator` as the API server does).
"""

from __future__ import annotations

from typing import Any

from .fielderrors import (
    FieldErrors,
    each_invalid,
    invalid,
    label_key_errors,
    label_value_errors,
    not_supported,
)


def toleration_errors(tolerations: Any, path: str) -> FieldErrors:
    errs: FieldErrors = []
    for i, t in enumerate(tolerations):
        at = f"{path}[{i}]"
        key, op = t.key or "", t.operator or ""
        if key:
            errs += each_invalid(f"{at}.key", key, label_key_errors(key))
        if not key and op != "Exists":
            errs.append(invalid(f"{at}.operator", op, "operator must be Exists when `key` is "
                                "empty, which means \"match all values and all keys\""))
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            errs.append(invalid(f"{at}.effect", t.effect or "",
                                "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        value = t.value or ""
        if op in ("Equal", ""):
            whys = label_value_errors(value)
            if whys:
                errs.append(invalid(f"{at}.operator", value, ";".join(whys)))
        elif op == "Exists":
            if value:
                errs.append(invalid(f"{at}.operator", value,
                                    "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(f"{at}.operator", op, ("Equal", "Exists")))
    return errs
