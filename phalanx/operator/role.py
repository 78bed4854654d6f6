"""The startup waiter's Role, one per PodCliqueSet (Grove's `podcliqueset/components/role`):
read-only access to pods in the PodCliqueSet's namespace -- get, list and watch of `pods`
and `pods/status`, nothing else (no writes, no Secrets, no other kinds). RBAC cannot narrow
a list by labels, so, as in Grove, the namespace is the boundary."""

from __future__ import annotations

from phalanx.api.grove import PodCliqueSet
from phalanx.api.rbac import PolicyRule, Role

from .pcs_component import Component, component_meta, restore_labels

COMPONENT_ROLE = "pod-role"  # Grove's LabelComponentNamePodRole
GROUP = "grove.io"


def role_name(pcs: str) -> str:
    """Grove's GeneratePodRoleName: `grove.io:pcs:<name>`."""
    return f"{GROUP}:pcs:{pcs}"


def role_rules() -> list[PolicyRule]:
    return [PolicyRule(api_groups=[""], resources=["pods", "pods/status"],
                       verbs=["get", "list", "watch"])]


def build_role(pcs: PodCliqueSet) -> Role:
    name = role_name(pcs.name)
    # Label values cannot hold ':' (Grove replaces it the same way).
    return Role(metadata=component_meta(pcs, name, COMPONENT_ROLE, name.replace(":", "-")),
                rules=role_rules())


def _restore(existing: Role, want: Role) -> bool:
    changed = restore_labels(existing, want)
    if existing.rules != want.rules:
        existing.rules = want.rules
        changed = True
    return changed


ROLE = Component("pcs-role", Role, COMPONENT_ROLE, role_name, build_role, _restore)
