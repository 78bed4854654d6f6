"""Scheduler hints a PodCliqueSet carries in its labels and annotations, and who reads them.

Each peer scheduler reads a few keys of its own from a workload's metadata. Grove copies a
clique template's labels and annotations onto its pods and mirrors the PodCliqueSet's onto
its PodGangs (Grove #573), so a key may sit at either level:

| key | on | capability | read by |
|---|---|---|---|
| `kai.scheduler/queue` (label) | PodCliqueSet, clique | KAIQueues | kai-scheduler, phalanx-scheduler |
| `kai.scheduler/preemptibility` (label) | PodCliqueSet, clique | KAIPreemptibility | kai-scheduler, phalanx-scheduler |
| `gpu-fraction`, `gpu-memory`, ... (annotations) | clique | KAIGPUSharing | kai-scheduler |
| `kai.scheduler/topology*` (annotations) | PodCliqueSet | KAIPodGroupMetadata | kai-scheduler |
| `kai.scheduler/node-pool` (label) | PodCliqueSet, clique | KAIPodGroupMetadata | kai-scheduler |
| `scheduling.volcano.sh/queue-name` (annotation) | PodCliqueSet, clique | VolcanoQueues | volcano |
| `volcano.sh/queue-name` (label) | PodCliqueSet, clique | VolcanoQueues | volcano |
| `volcano.sh/preemptable` (annotation or label) | clique | VolcanoPreemptable | volcano |

`hint_uses` turns each key found into a feature use, so a backend whose scheduler does not read
it reports it (`SchedulerCompatible`) or refuses it, per its mismatch policy, naming the field.
All are best-effort (reported, never refused) -- a key left over from another scheduler should
not block a migration -- except GPU sharing: ignored, the pod would get no GPU at all.
KAI's generic `priorityClassName` and `project` labels are read by the kai backend only and
are not reported elsewhere: other tools use labels of those names for their own ends.

Where a key may sit at several places, the first in a `Chain` wins for a clique's pods;
`overridden_issues` reports a place that never wins with a different value. `podgang_value`
resolves a chain for a PodGang's pods (a backend's sync), `cached_podcliqueset` finds the
PodCliqueSet a pod is made for (a backend's `prepare_pod`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from phalanx.api import labels as L

from .base import Capability, ValidationIssue
from .objects import member_templates, owning_podcliqueset

if TYPE_CHECKING:
    from phalanx.api.grove import PodCliqueSet, PodGang
    from phalanx.api.pod import Pod
    from phalanx.cluster.client import Client

    from .base import CacheReader
    from .features import FeatureUse

Level = Literal["pcs", "clique"]
Kind = Literal["labels", "annotations"]


@dataclass(frozen=True, slots=True)
class Place:
    level: Level
    kind: Kind
    key: str

    def field(self, clique: int) -> str:
        if self.level == "pcs":
            return f"metadata.{self.kind}[{self.key}]"
        return f"spec.template.cliques[{clique}].{self.kind}[{self.key}]"

    def value(self, pcs: PodCliqueSet, clique: int) -> str | None:
        if self.level == "pcs":
            meta = pcs.metadata.labels if self.kind == "labels" else pcs.metadata.annotations
        else:
            c = pcs.spec.template.cliques[clique]
            meta = (c.labels if self.kind == "labels" else c.annotations) or {}
        return meta.get(self.key) or None


Chain = tuple[Place, ...]  # places in precedence order

# KAI's grove grouper: the PodGang's label (the PodCliqueSet's, mirrored) before the pod's.
KAI_QUEUE: Chain = (Place("pcs", "labels", L.LABEL_KAI_QUEUE),
                    Place("clique", "labels", L.LABEL_KAI_QUEUE))
KAI_PREEMPTIBILITY: Chain = (Place("pcs", "labels", L.LABEL_KAI_PREEMPTIBILITY),
                             Place("clique", "labels", L.LABEL_KAI_PREEMPTIBILITY))
# Volcano's PodGroup controller reads the pod's annotation; the PodCliqueSet's is the same
# request one level up; Phalanx's earlier label after both.
VOLCANO_QUEUE: Chain = (Place("clique", "annotations", L.ANNOTATION_VOLCANO_QUEUE),
                        Place("pcs", "annotations", L.ANNOTATION_VOLCANO_QUEUE),
                        Place("clique", "labels", L.LABEL_VOLCANO_QUEUE),
                        Place("pcs", "labels", L.LABEL_VOLCANO_QUEUE))


@dataclass(frozen=True, slots=True)
class Hint:
    places: Chain
    capability: Capability
    what: str  # for humans: "KAI queue"
    best_effort: bool = True


def _clique(kind: Kind, *keys: str) -> Chain:
    return tuple(Place("clique", kind, k) for k in keys)


HINTS: tuple[Hint, ...] = (
    Hint(KAI_QUEUE, Capability.KAI_QUEUES, "KAI queue"),
    Hint(KAI_PREEMPTIBILITY, Capability.KAI_PREEMPTIBILITY, "KAI preemptibility"),
    *(Hint(_clique("annotations", key), Capability.KAI_GPU_SHARING, "KAI GPU sharing",
           best_effort=False) for key in L.KAI_GPU_SHARING_ANNOTATIONS),
    *(Hint((Place("pcs", "annotations", key),), Capability.KAI_PODGROUP_METADATA,
           "KAI PodGroup topology") for key in (L.ANNOTATION_KAI_TOPOLOGY,
                                                 L.ANNOTATION_KAI_TOPOLOGY_REQUIRED,
                                                 L.ANNOTATION_KAI_TOPOLOGY_PREFERRED)),
    Hint((Place("pcs", "labels", L.LABEL_KAI_NODE_POOL),
          Place("clique", "labels", L.LABEL_KAI_NODE_POOL)),
         Capability.KAI_PODGROUP_METADATA, "KAI node pool (scheduling shard)"),
    Hint(VOLCANO_QUEUE[:2], Capability.VOLCANO_QUEUES, "Volcano queue"),
    Hint(VOLCANO_QUEUE[2:], Capability.VOLCANO_QUEUES, "Volcano queue"),
    Hint(_clique("annotations", L.VOLCANO_PREEMPTABLE) + _clique("labels", L.VOLCANO_PREEMPTABLE),
         Capability.VOLCANO_PREEMPTABLE, "Volcano preemptable"),
)


def _found(pcs: PodCliqueSet, places: Chain) -> Iterable[tuple[str, str]]:
    """(field, value) of every place with a value: PodCliqueSet-level places once,
    clique-level ones per clique."""
    n = len(pcs.spec.template.cliques)
    for place in places:
        for i in range(1 if place.level == "pcs" else n):
            value = place.value(pcs, i)
            if value:
                yield place.field(i), value


def hint_uses(pcs: PodCliqueSet) -> list[FeatureUse]:
    """One feature use per hint key the PodCliqueSet sets, at the first place found."""
    from .features import FeatureUse

    uses = []
    for hint in HINTS:
        seen: set[str] = set()
        for field, value in _found(pcs, hint.places):
            key = field.rsplit("[", 1)[1]
            if key in seen:
                continue
            seen.add(key)
            uses.append(FeatureUse(hint.capability, field, f"{hint.what} {value!r}",
                                   best_effort=hint.best_effort))
    return uses


def first(pcs: PodCliqueSet, chain: Chain, cliques: Sequence[int] | None = None
          ) -> tuple[str, str] | None:
    """(field, value) that wins for pods of `cliques` (indices; default every clique): the
    first place in the chain with a value, clique-level places looked up clique by clique."""
    indices = range(len(pcs.spec.template.cliques)) if cliques is None else cliques
    for place in chain:
        for i in ([0] if place.level == "pcs" else indices):
            value = place.value(pcs, i)
            if value:
                return place.field(i), value
    return None


def clique_indices(pcs: PodCliqueSet, names: Iterable[str]) -> list[int]:
    wanted = set(names)
    return [i for i, c in enumerate(pcs.spec.template.cliques) if c.name in wanted]


def overridden_issues(pcs: PodCliqueSet, chain: Chain, what: str, capability: Capability,
                      why: str) -> list[ValidationIssue]:
    """A best-effort issue for each place whose value never reaches a clique's pods because a
    place before it in `chain` has another value (`why`: whose precedence this is)."""
    issues: dict[str, ValidationIssue] = {}
    for i in range(len(pcs.spec.template.cliques)):
        winner = first(pcs, chain, [i])
        if winner is None:
            continue
        for place in chain:
            field, value = place.field(i), place.value(pcs, i)
            if value and value != winner[1] and field not in issues:
                issues[field] = ValidationIssue(
                    field=field, feature=capability, best_effort=True,
                    message=f"{what} {value!r} is overridden by {winner[0]} ({winner[1]!r}): {why}")
    return list(issues.values())


def preemptibility_errors(pcs: PodCliqueSet) -> list[ValidationIssue]:
    """An invalid kai.scheduler/preemptibility value, refused naming the field (KAI's grouper
    fails on one: `v2alpha2.ParsePreemptibility`)."""
    allowed = L.KAI_PREEMPTIBILITY_VALUES
    return [ValidationIssue(field=field, message=(
                f"Unsupported value: {value!r}: supported values: "
                + ", ".join(f'"{v}"' for v in allowed)))
            for field, value in _found(pcs, KAI_PREEMPTIBILITY) if value not in allowed]


async def podgang_value(client: Client, podgang: PodGang, chain: Chain,
                        cache: CacheReader | None = None) -> str | None:
    """What a PodGang's pods ask for under `chain` (e.g. their queue), the chain in its order:
    a PodCliqueSet-level place is the PodGang's own label or annotation (Grove mirrors the
    PodCliqueSet's onto it), else the PodCliqueSet's; a clique-level place, the clique
    templates of the PodGang's groups. Then the chain over any clique template. The
    PodCliqueSet is read only when a place needs it."""
    pcs: PodCliqueSet | None = None
    read = False
    for place in chain:
        if place.level == "pcs":
            meta = podgang.metadata.labels if place.kind == "labels" else podgang.metadata.annotations
            if meta.get(place.key):
                return meta[place.key]
        if not read:
            pcs, read = await owning_podcliqueset(client, podgang, cache), True
        if pcs is None:
            continue
        members = [0] if place.level == "pcs" else _member_indices(pcs, podgang)
        found = first(pcs, (place,), members)
        if found is not None:
            return found[1]
    found = first(pcs, chain) if pcs is not None else None
    return found[1] if found is not None else None


def _member_indices(pcs: PodCliqueSet, podgang: PodGang) -> list[int]:
    return clique_indices(pcs, member_templates(pcs, [g.name for g in podgang.spec.pod_groups]))


def pcs_value(pcs: PodCliqueSet, podgang: PodGang, chain: Chain) -> str | None:
    """The chain's winner for the clique templates of the PodGang's groups, else for any
    clique template (a PodGang whose own cliques name none takes the set's)."""
    found = first(pcs, chain, _member_indices(pcs, podgang)) or first(pcs, chain)
    return found[1] if found is not None else None


def cached_podcliqueset(cache: CacheReader | None, pod: Pod) -> PodCliqueSet | None:
    """The PodCliqueSet a pod is being made for (its part-of label), from the operator's
    informer cache (which always holds it: a PodClique exists only under its PodCliqueSet);
    None without a cache. For `prepare_pod`, which sees only the pod."""
    from phalanx.api.grove import PodCliqueSet

    name = pod.metadata.labels.get(L.LABEL_PART_OF)
    if cache is None or not name:
        return None
    return cache.cached(PodCliqueSet, name, pod.metadata.namespace)
