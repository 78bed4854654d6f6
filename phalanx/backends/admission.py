"""PodCliqueSet admission for scheduler backends (GREP-375).

`check_podcliqueset(pcs, old_pcs, registry)` resolves the one backend a PodCliqueSet uses
and sorts every finding into `errors` (the webhook rejects) and `ignored` (admitted; the
PodCliqueSet controller lists them in the `SchedulerCompatible` condition):

1. every clique's `schedulerName` must name an enabled backend (empty = the default profile);
2. every clique must resolve to the same backend;
3. on update, a clique's `schedulerName` may not change;
4. then the backend's own `validate_podcliqueset`: plain errors are always rejected;
   capability mismatches follow the backend's mismatch policy; best-effort preferences
   are never rejected, only reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .base import Backend, MismatchPolicy, ValidationIssue
from .registry import BackendRegistry, UnknownBackend

if TYPE_CHECKING:
    from phalanx.api.grove import PodCliqueSet

# The PodCliqueSet status condition the operator sets from `ignored`.
CONDITION_SCHEDULER_COMPATIBLE = "SchedulerCompatible"
REASON_ALL_FEATURES_SUPPORTED = "AllFeaturesSupported"
REASON_UNSUPPORTED_FEATURES_IGNORED = "UnsupportedFeaturesIgnored"


@dataclass(slots=True)
class BackendCheck:
    backend: Backend | None  # None when no single enabled backend could be resolved
    errors: list[ValidationIssue] = field(default_factory=list)
    ignored: list[ValidationIssue] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return not self.errors

    def error_message(self) -> str:
        """All errors as one admission message: `field: why; field: why`."""
        return "; ".join(f"{e.field}: {e.message}" for e in self.errors)

    def condition(self) -> tuple[bool, str, str]:
        """(status, reason, message) of the `SchedulerCompatible` condition."""
        if not self.ignored:
            name = self.backend.name if self.backend else "the scheduler"
            return True, REASON_ALL_FEATURES_SUPPORTED, f"{name} supports every requested feature"
        parts = [f"{i.field} ({i.message})" for i in self.ignored]
        name = self.backend.name if self.backend else "the scheduler"
        return (
            False,
            REASON_UNSUPPORTED_FEATURES_IGNORED,
            f"{name} ignores {len(parts)} requested feature(s): " + "; ".join(parts),
        )


def _clique_scheduler_names(pcs: PodCliqueSet) -> list[tuple[str, str, str]]:
    """(clique name, field path, schedulerName) for every clique, in spec order."""
    return [
        (
            c.name,
            f"spec.template.cliques[{i}].spec.podSpec.schedulerName",
            c.spec.pod_spec.scheduler_name,
        )
        for i, c in enumerate(pcs.spec.template.cliques)
    ]


def check_podcliqueset(
    pcs: PodCliqueSet, old_pcs: PodCliqueSet | None, registry: BackendRegistry
) -> BackendCheck:
    check = BackendCheck(backend=None)
    resolved: list[tuple[str, str, Backend]] = []  # (clique, field, backend)
    for clique, path, name in _clique_scheduler_names(pcs):
        try:
            resolved.append((clique, path, registry.get_or_default(name)))
        except UnknownBackend as e:
            check.errors.append(ValidationIssue(field=path, message=str(e)))

    if old_pcs is not None:
        old_names = {clique: name for clique, _, name in _clique_scheduler_names(old_pcs)}
        for clique, path, name in _clique_scheduler_names(pcs):
            before = old_names.get(clique)
            if before is not None and before != name:
                check.errors.append(
                    ValidationIssue(
                        field=path,
                        message=f"field is immutable (was {before!r}, now {name!r})",
                    )
                )

    if not resolved:
        return check
    first_clique, _, backend = resolved[0]
    for clique, path, other in resolved[1:]:
        if other is not backend:
            check.errors.append(
                ValidationIssue(
                    field=path,
                    message=(
                        f"every clique must use the same scheduler: clique {clique!r} resolves "
                        f"to {other.name!r} but clique {first_clique!r} to {backend.name!r}"
                    ),
                )
            )
    if check.errors:
        return check  # a backend's own checks mean nothing until the backend is settled

    check.backend = backend
    for issue in backend.validate_podcliqueset(pcs):
        if issue.feature is None:
            check.errors.append(issue)
        elif issue.best_effort or backend.mismatch_policy is MismatchPolicy.PASS_THROUGH:
            check.ignored.append(issue)
        else:
            check.errors.append(issue)
    return check
