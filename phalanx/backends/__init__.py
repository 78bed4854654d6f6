"""Scheduler backends (GREP-375). Importing this package registers every backend."""

# Each backend module registers itself on import; adding a scheduler = adding a line here.
from . import kai, koordinator, kube, phalanx_scheduler, schedulerplugins, volcano  # noqa: F401
from .admission import BackendCheck, check_podcliqueset
from .base import (
    Backend,
    BackendConfig,
    BackendSpec,
    Capability,
    MismatchPolicy,
    SyncPending,
    ValidationIssue,
    known_backends,
    register_backend,
)
from .rbac import rbac_rules
from .registry import BackendConfigError, BackendRegistry, UnknownBackend

__all__ = [
    "Backend",
    "BackendCheck",
    "BackendConfig",
    "BackendConfigError",
    "BackendRegistry",
    "BackendSpec",
    "Capability",
    "MismatchPolicy",
    "SyncPending",
    "UnknownBackend",
    "ValidationIssue",
    "check_podcliqueset",
    "known_backends",
    "rbac_rules",
    "register_backend",
]
