"""The few Kubernetes kinds only the services read and write (webhook TLS plumbing).

Fields the services never interpret stay opaque (`extra="allow"`), so objects installed by
kubectl or Helm decode whole and round-trip unchanged.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from phalanx.api.base import Resource


class Secret(Resource):
    API_VERSION = "v1"
    KIND = "Secret"
    PLURAL = "secrets"
    NAMESPACED = True

    type: str | None = None
    data: dict[str, str] = Field(default_factory=dict)  # base64 values
    string_data: dict[str, str] | None = None
    immutable: bool | None = None


class _WebhookConfiguration(Resource):
    model_config = ConfigDict(extra="allow")
    NAMESPACED = False

    webhooks: list[dict[str, Any]] = Field(default_factory=list)


class MutatingWebhookConfiguration(_WebhookConfiguration):
    API_VERSION = "admissionregistration.k8s.io/v1"
    KIND = "MutatingWebhookConfiguration"
    PLURAL = "mutatingwebhookconfigurations"


class ValidatingWebhookConfiguration(_WebhookConfiguration):
    API_VERSION = "admissionregistration.k8s.io/v1"
    KIND = "ValidatingWebhookConfiguration"
    PLURAL = "validatingwebhookconfigurations"
