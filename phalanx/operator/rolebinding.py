"""Binds the startup waiter's Role to its ServiceAccount, one per PodCliqueSet (Grove's
`podcliqueset/components/rolebinding`, named as the Role)."""

from __future__ import annotations

from phalanx.api.grove import PodCliqueSet
from phalanx.api.rbac import RoleBinding, RoleRef, Subject

from .pcs_component import Component, component_meta, restore_labels
from .role import role_name
from .serviceaccount import service_account_name

COMPONENT_ROLE_BINDING = "pod-role-binding"  # Grove's LabelComponentNamePodRoleBinding
RBAC_GROUP = "rbac.authorization.k8s.io"


def role_binding_name(pcs: str) -> str:
    """Grove's GeneratePodRoleBindingName (the Role's name)."""
    return role_name(pcs)


def build_role_binding(pcs: PodCliqueSet) -> RoleBinding:
    name = role_binding_name(pcs.name)
    return RoleBinding(
        metadata=component_meta(pcs, name, COMPONENT_ROLE_BINDING, name.replace(":", "-")),
        role_ref=RoleRef(api_group=RBAC_GROUP, kind="Role", name=role_name(pcs.name)),
        subjects=[Subject(kind="ServiceAccount", api_group="",
                          name=service_account_name(pcs.name), namespace=pcs.namespace)])


def _restore(existing: RoleBinding, want: RoleBinding) -> bool:
    # roleRef is immutable on the API server; a binding pointing elsewhere cannot be
    # repaired in place, and nobody but us names one `grove.io:pcs:<name>`.
    changed = restore_labels(existing, want)
    if existing.subjects != want.subjects:
        existing.subjects = want.subjects
        changed = True
    return changed


ROLE_BINDING = Component("pcs-rolebinding", RoleBinding, COMPONENT_ROLE_BINDING,
                         role_binding_name, build_role_binding, _restore)
