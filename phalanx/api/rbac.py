"""Identity kinds the operator writes for Grove's startup waiter (grove-initc): a
ServiceAccount, its token Secret, and a namespaced Role and RoleBinding (see
phalanx.operator.serviceaccount, satokensecret, role, rolebinding). Only the fields those
objects use are typed; Secret data is the token controller's and stays opaque."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, Resource


class ServiceAccount(Resource):
    API_VERSION = "v1"
    KIND = "ServiceAccount"
    PLURAL = "serviceaccounts"
    SHORT_NAMES = ("sa",)
    NAMESPACED = True

    automount_service_account_token: bool | None = None
    secrets: list[dict[str, str]] | None = None
    image_pull_secrets: list[dict[str, str]] | None = None


class Secret(Resource):
    API_VERSION = "v1"
    KIND = "Secret"
    PLURAL = "secrets"
    NAMESPACED = True

    type: str | None = None
    data: dict[str, str] | None = None
    string_data: dict[str, str] | None = None
    immutable: bool | None = None


class PolicyRule(KubeModel):
    api_groups: list[str] | None = None
    resources: list[str] | None = None
    verbs: list[str] = Field(default_factory=list)
    resource_names: list[str] | None = None
    non_resource_urls: list[str] | None = Field(default=None, alias="nonResourceURLs")


class Role(Resource):
    API_VERSION = "rbac.authorization.k8s.io/v1"
    KIND = "Role"
    PLURAL = "roles"
    NAMESPACED = True
    # Names like `grove.io:pcs:<name>` are valid (phalanx.cluster.rules).
    PATH_SEGMENT_NAME: ClassVar[bool] = True

    rules: list[PolicyRule] | None = None


class RoleRef(KubeModel):
    api_group: str
    kind: str
    name: str


class Subject(KubeModel):
    kind: str
    name: str
    api_group: str | None = None
    namespace: str | None = None


class RoleBinding(Resource):
    API_VERSION = "rbac.authorization.k8s.io/v1"
    KIND = "RoleBinding"
    PLURAL = "rolebindings"
    NAMESPACED = True
    # Names like `grove.io:pcs:<name>` are valid (phalanx.cluster.rules).
    PATH_SEGMENT_NAME: ClassVar[bool] = True

    role_ref: RoleRef
    subjects: list[Subject] | None = None


SECRET_TYPE_SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"
ANNOTATION_SERVICE_ACCOUNT_NAME = "kubernetes.io/service-account.name"

for _kind in (ServiceAccount, Secret, Role, RoleBinding):
    _registry.register(_kind)
