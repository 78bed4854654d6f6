"""Scheduler backends (GREP-375). Importing this package registers every backend."""

from . import kube  # noqa: F401  (registers default-scheduler)
from .base import (
    Backend,
    BackendConfig,
    BackendSpec,
    Capability,
    MismatchPolicy,
    ValidationIssue,
    known_backends,
    register_backend,
)
from .registry import BackendConfigError, BackendRegistry, UnknownBackend

__all__ = [
    "Backend",
    "BackendConfig",
    "BackendConfigError",
    "BackendRegistry",
    "BackendSpec",
    "Capability",
    "MismatchPolicy",
    "UnknownBackend",
    "ValidationIssue",
    "known_backends",
    "register_backend",
]
