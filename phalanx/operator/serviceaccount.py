"""The startup waiter's ServiceAccount, one per PodCliqueSet (Grove's
`podcliqueset/components/serviceaccount`): named after the PodCliqueSet, token automount on.
The Role (role.py) is bound to it and its token Secret (satokensecret.py) is mounted into
the init container (startupwaiter.py)."""

from __future__ import annotations

from phalanx.api.grove import PodCliqueSet
from phalanx.api.rbac import ServiceAccount

from .pcs_component import Component, component_meta, restore_labels

COMPONENT_SERVICE_ACCOUNT = "pod-service-account"  # Grove's LabelComponentNamePodServiceAccount


def service_account_name(pcs: str) -> str:
    """Grove's GeneratePodServiceAccountName."""
    return pcs


def build_service_account(pcs: PodCliqueSet) -> ServiceAccount:
    name = service_account_name(pcs.name)
    return ServiceAccount(
        metadata=component_meta(pcs, name, COMPONENT_SERVICE_ACCOUNT, name),
        automount_service_account_token=True)


def _restore(existing: ServiceAccount, want: ServiceAccount) -> bool:
    changed = restore_labels(existing, want)
    if existing.automount_service_account_token != want.automount_service_account_token:
        existing.automount_service_account_token = want.automount_service_account_token
        changed = True
    return changed


SERVICE_ACCOUNT = Component("pcs-serviceaccount", ServiceAccount, COMPONENT_SERVICE_ACCOUNT,
                            service_account_name, build_service_account, _restore)
