"""The startup waiter's token Secret, one per PodCliqueSet (Grove's
`podcliqueset/components/satokensecret`): type `kubernetes.io/service-account-token`,
annotated with the ServiceAccount's name, so kube-controller-manager's token controller
fills in `token`, `ca.crt` and `namespace`. The init container mounts it where in-cluster
clients look for credentials (startupwaiter.py), whatever ServiceAccount the pod runs as."""

from __future__ import annotations

from phalanx.api.grove import PodCliqueSet
from phalanx.api.rbac import (
    ANNOTATION_SERVICE_ACCOUNT_NAME,
    SECRET_TYPE_SERVICE_ACCOUNT_TOKEN,
    Secret,
)

from .pcs_component import Component, component_meta, restore_labels
from .serviceaccount import service_account_name

# Grove's LabelComponentNameServiceAccountTokenSecret
COMPONENT_TOKEN_SECRET = "pod-sa-token-secret"


def token_secret_name(pcs: str) -> str:
    """Grove's GenerateInitContainerSATokenSecretName."""
    return f"{pcs}-ic-sat"


def build_token_secret(pcs: PodCliqueSet) -> Secret:
    name = token_secret_name(pcs.name)
    return Secret(
        metadata=component_meta(pcs, name, COMPONENT_TOKEN_SECRET, name, annotations={
            ANNOTATION_SERVICE_ACCOUNT_NAME: service_account_name(pcs.name)}),
        type=SECRET_TYPE_SERVICE_ACCOUNT_TOKEN)


def _restore(existing: Secret, want: Secret) -> bool:
    # The type and the annotation are immutable in effect (the token controller acts on
    # creation); the data is the token controller's. Only our labels are put back.
    return restore_labels(existing, want)


TOKEN_SECRET = Component("pcs-satokensecret", Secret, COMPONENT_TOKEN_SECRET,
                         token_secret_name, build_token_secret, _restore)
