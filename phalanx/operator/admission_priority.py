"""PriorityClasses a PodCliqueSet names must exist (Phalanx's own rule, not Grove's).

Phalanx gives every pod `spec.template.priorityClassName` unless its clique's podSpec names
a class of its own (a deliberate difference from Grove, which sets it on the PodGang only;
docs/real-cluster.md). The API server refuses a pod that names no existing PriorityClass,
so such a PodCliqueSet would be admitted and then never get a pod. It is refused instead,
naming the field, on create and when an update changes the name; an unchanged name is not
checked again (a PriorityClass deleted later shows as the pods' FailedCreate Events).
The built-in system classes always exist. Needs a client to read PriorityClasses with.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.core import PriorityClass
from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.client import NotFound
from phalanx.cluster.podvalidation.fielderrors import FieldErrors, not_found
from phalanx.cluster.priority import SYSTEM_CLASSES


def _named(pcs: PodCliqueSet) -> list[tuple[str, str]]:
    """(field path, class name) of every PriorityClass the PodCliqueSet names."""
    t = pcs.spec.template
    out = [("spec.template.priorityClassName", t.priority_class_name or "")]
    out += [(f"spec.template.cliques[{i}].spec.podSpec.priorityClassName",
             c.spec.pod_spec.priority_class_name or "") for i, c in enumerate(t.cliques)]
    return [(path, name) for path, name in out if name]


async def priority_class_errors(pcs: PodCliqueSet, old: PodCliqueSet | None,
                                reader: Any) -> FieldErrors:
    before = {name for _, name in _named(old)} if old is not None else set()
    errs: FieldErrors = []
    found: dict[str, bool] = {}
    for path, name in _named(pcs):
        if name in before or name in SYSTEM_CLASSES:
            continue
        if name not in found:
            try:
                await reader.get(PriorityClass, name)
                found[name] = True
            except NotFound:
                found[name] = False
        if not found[name]:
            errs.append(not_found(path, name, f"no PriorityClass with name {name} was found; "
                                              "the operator gives it to the pods, which the "
                                              "API server would refuse (create the "
                                              "PriorityClass first)"))
    return errs
