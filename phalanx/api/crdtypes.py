"""Schema facts of Grove's CRDs that a Python type does not say by itself.

Grove's CRDs are generated from Go types: integers carry `format: int32` / `int64`, the
API server applies defaults, lists may be keyed maps, and CEL rules
(`x-kubernetes-validations`) check what the schema alone cannot. The models here carry the
same facts (in `json_schema_extra`), so the CRDs that `phalanx.api.crds` generates hold the
same schema as Grove's. They change nothing in how the models validate in Python; admission
(phalanx.operator.admission) enforces the rules for the embedded cluster.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

Int32 = Annotated[int, Field(json_schema_extra={"format": "int32"})]
Int64 = Annotated[int, Field(json_schema_extra={"format": "int64"})]


def crd(**schema: Any) -> dict[str, Any]:
    """`json_schema_extra` holding CRD-only keywords, spelled as in a CRD
    (`crd(**{"x-kubernetes-list-type": "map"})`)."""
    return dict(schema)


def python_only(*keywords: str, **schema: Any) -> dict[str, Any]:
    """`json_schema_extra` for a constraint checked in Python (and by admission) that Grove's
    CRD leaves to its webhook: `keywords` are left out of the generated CRD."""
    return {**schema, **{k: None for k in keywords}}


def rule(expr: str, message: str, *, reason: str | None = None, field_path: str | None = None,
         optional_old_self: bool = False) -> dict[str, Any]:
    """One `x-kubernetes-validations` entry (keys in the order controller-gen writes them)."""
    out: dict[str, Any] = {}
    if field_path is not None:
        out["fieldPath"] = field_path
    out["message"] = message
    if optional_old_self:
        out["optionalOldSelf"] = True
    if reason is not None:
        out["reason"] = reason
    out["rule"] = expr
    return out


def validations(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"x-kubernetes-validations": list(rules)}


# metav1.Condition as every Kubernetes CRD declares it (apimachinery's validation markers).
METAV1_CONDITION: dict[str, Any] = {
    "type": "object",
    "description": "Condition contains details for one aspect of the current state of this "
                   "API Resource.",
    "properties": {
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "message": {"type": "string", "maxLength": 32768},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "reason": {"type": "string", "maxLength": 1024, "minLength": 1,
                   "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "type": {"type": "string", "maxLength": 316,
                 "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)"
                            r"?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"},
    },
    "required": ["lastTransitionTime", "message", "reason", "status", "type"],
}

# The longest condition message (and lastErrors description) the schema above allows.
MAX_CONDITION_MESSAGE = 32768
