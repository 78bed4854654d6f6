"""PriorityClasses a PodCliqueSet names must exist (Phalanx's own rule, not Grove's).

Phalanx gives every pod `spec.template.priorityClassName` unless its clique's podSpec names
a class of its own (a deliberate difference from Grove, which sets it on the PodGang only;
docs/real-cluster.md). The API server refuses a pod that names no existing PriorityClass,
so such a PodCliqueSet would be admitted and then never get a pod. It is refused instead,
naming the field, on create and when an update changes the name; an unchanged name is not
checked again (a PriorityClass deleted later shows as the pods' FailedCreate Events).
The built-in system classes always exist. Needs a client to read PriorityClasses with.

A clique's podSpec may not choose its own `priority` or `preemptionPolicy`: the API server's
Priority admission refuses a pod whose written values differ from what its class gives
(cluster/priority.py), so such a PodCliqueSet is refused at that field, with kube's words.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.core import PriorityClass
from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.client import NotFound
from phalanx.cluster.podvalidation.fielderrors import FieldErrors, forbidden, not_found
from phalanx.cluster.priority import SYSTEM_CLASSES, establish_priority, written_priority_error


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


async def written_priority_errors(pcs: PodCliqueSet, reader: Any) -> FieldErrors:
    """Cliques whose podSpec writes a `priority` or `preemptionPolicy` other than the one
    the pods' PriorityClass (the clique's, else the template's, else the global default)
    gives."""
    t = pcs.spec.template
    written = [(i, c.spec.pod_spec) for i, c in enumerate(t.cliques)
               if c.spec.pod_spec.priority is not None
               or c.spec.pod_spec.preemption_policy is not None]
    if not written:
        return []
    classes = {pc.name: pc for pc in (await reader.list(PriorityClass)).items}
    errs: FieldErrors = []
    for i, spec in written:
        try:
            _, value, policy = establish_priority(
                classes, spec.priority_class_name or t.priority_class_name)
        except LookupError:
            continue  # priority_class_errors names the class
        refused = written_priority_error(spec.priority, spec.preemption_policy, value, policy)
        if refused is not None:
            field, why = refused
            errs.append(forbidden(f"spec.template.cliques[{i}].spec.podSpec.{field}", why))
    return errs
