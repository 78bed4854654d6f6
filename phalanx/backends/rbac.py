"""RBAC rules the operator needs for the configured scheduler backends.

Each backend declares, in its `BackendSpec.rbac`, the API groups, resources and verbs it
writes. `rbac_rules` merges them for a set of enabled backends into ClusterRole rules
(sorted, deduplicated) for `phalanx manifests` to append to the operator's role, so an
operator configured only for kube-scheduler gets no permission on KAI or Volcano objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .base import known_backends
from .registry import DEFAULT_SCHEDULER, BackendRegistry


def rbac_rules(backends: BackendRegistry | Iterable[str]) -> list[dict[str, Any]]:
    """ClusterRole `rules` for the given registry or backend profile names.

    `default-scheduler` is always included (it is always enabled). Unknown names raise
    KeyError naming the known ones.
    """
    names = backends.names() if isinstance(backends, BackendRegistry) else list(backends)
    if DEFAULT_SCHEDULER not in names:
        names.append(DEFAULT_SCHEDULER)
    specs = known_backends()
    # (apiGroup, resource) -> verbs, so two backends sharing a resource merge their verbs.
    verbs_by_resource: dict[tuple[str, str], set[str]] = {}
    for name in names:
        spec = specs.get(name)
        if spec is None:
            raise KeyError(f"unknown scheduler backend {name!r}; known: {', '.join(sorted(specs))}")
        for group, resources, verbs in spec.rbac:
            for resource in resources:
                verbs_by_resource.setdefault((group, resource), set()).update(verbs)
    # One rule per (group, verb set), listing its resources: compact and stable.
    rules: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), verbs in sorted(verbs_by_resource.items()):
        rules.setdefault((group, tuple(sorted(verbs))), []).append(resource)
    return [
        {"apiGroups": [group], "resources": resources, "verbs": list(verbs)}
        for (group, verbs), resources in sorted(rules.items())
    ]
