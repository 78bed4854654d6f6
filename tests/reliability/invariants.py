"""What must hold on a converged cluster, whatever happened on the way, and a normal form of
the cluster's state for comparing two runs.

Each check returns a list of human-readable problems (empty = fine), so a failing test names
every broken object at once.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from typing import Any

from phalanx.api import labels
from phalanx.api.base import Resource
from phalanx.api.core import Event, Lease, Node, Pod
from phalanx.api.grove import PodClique, PodCliqueSet, PodGang
from phalanx.api.quantity import parse_resources
from phalanx.cluster.client import AlreadyExists, ApiError, Client, Invalid, NotFound
from phalanx.cluster.memory import MemoryCluster

# Kinds that are inputs or bookkeeping, not something the control plane derives.
_NOT_DERIVED = {"Node", "Event", "Lease", "ClusterTopology", "ClusterTopologyBinding",
                "PriorityClass", "Namespace", "PodCliqueSet", "Queue"}
# Scheduler objects the backends write (owned by their PodGang).
SCHEDULER_GROUPS = ("scheduling.k8s.io/", "scheduling.run.ai/", "scheduling.volcano.sh/",
                    "scheduling.sigs.k8s.io/")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


async def create_retrying(client: Client, obj: Resource, attempts: int = 100) -> None:
    """As `kubectl apply` retried: transient errors are retried, AlreadyExists is success
    (an earlier attempt that reported an error may have been applied)."""
    for _ in range(attempts):
        try:
            await client.create(obj.copy_deep())
            return
        except AlreadyExists:
            return
        except Invalid:
            raise
        except ApiError:
            await asyncio.sleep(0.2)
    raise AssertionError(f"could not create {obj.kind} {obj.name} in {attempts} attempts")


async def delete_retrying(client: Client, kind: type[Resource], name: str,
                          namespace: str | None, attempts: int = 100) -> None:
    for _ in range(attempts):
        try:
            await client.delete(kind, name, namespace)
            return
        except NotFound:
            return
        except ApiError:
            await asyncio.sleep(0.2)
    raise AssertionError(f"could not delete {kind.KIND} {name} in {attempts} attempts")


async def everything(cluster: MemoryCluster) -> dict[type[Resource], list[Resource]]:
    return {kind: (await cluster.list(kind)).items for kind in cluster.kinds()}


def is_scheduler_object(kind: type[Resource]) -> bool:
    return kind.API_VERSION.startswith(SCHEDULER_GROUPS) and kind.KIND in ("Workload", "PodGroup")


def orphans(state: dict[type[Resource], list[Resource]]) -> list[str]:
    """Derived objects whose owner is gone (or is another incarnation: uid mismatch), and
    PodGangs / scheduler objects without any owner."""
    uids: dict[tuple[str, str | None, str], str] = {}
    for kind, items in state.items():
        for o in items:
            uids[(kind.KIND, o.metadata.namespace, o.name)] = o.metadata.uid or ""
    out = []
    for kind, items in state.items():
        if kind.KIND in _NOT_DERIVED:
            continue
        for o in items:
            refs = o.metadata.owner_references or []
            if not refs and (kind is PodGang or is_scheduler_object(kind)):
                out.append(f"{kind.API_VERSION} {kind.KIND} {o.key} has no owner")
            for ref in refs:
                live = uids.get((ref.kind, o.metadata.namespace, ref.name))
                if live != ref.uid:
                    out.append(f"{kind.API_VERSION} {kind.KIND} {o.key}: owner {ref.kind} "
                               f"{ref.name} {'is gone' if live is None else 'was replaced'}")
    return out


def duplicate_pods(pods: list[Pod], cliques: list[PodClique]) -> list[str]:
    """Two live pods for one clique index, or a clique with more live pods than replicas."""
    live = [p for p in pods if p.metadata.deletion_timestamp is None and not p.is_terminal]
    out = []
    per_index = Counter((p.metadata.namespace, p.metadata.labels.get(labels.LABEL_PODCLIQUE),
                         p.metadata.labels.get(labels.LABEL_PODCLIQUE_POD_INDEX)) for p in live)
    out += [f"clique {c} has {n} live pods with index {i}" for (_, c, i), n in per_index.items()
            if n > 1]
    per_clique = Counter((p.metadata.namespace, p.metadata.labels.get(labels.LABEL_PODCLIQUE))
                         for p in live)
    for c in cliques:
        n = per_clique.get((c.metadata.namespace, c.name), 0)
        if n > c.spec.replicas:
            out.append(f"clique {c.key} has {n} live pods for {c.spec.replicas} replicas")
    return out


def gang_binding(pods: list[Pod], gangs: list[PodGang]) -> tuple[list[str], list[str]]:
    """(partly bound gangs, gangs with a referenced pod missing or not bound)."""
    by_key = {p.key: p for p in pods}
    partly, unbound = [], []
    for g in gangs:
        refs = [f"{r.namespace}/{r.name}" for grp in g.spec.pod_groups for r in grp.pod_references]
        bound = [k for k in refs if k in by_key and by_key[k].spec.node_name]
        if bound and len(bound) < len(refs):
            partly.append(f"PodGang {g.key}: {len(bound)}/{len(refs)} pods bound")
        if len(bound) < len(refs) or not refs:
            unbound.append(f"PodGang {g.key}: {len(bound)}/{len(refs)} referenced pods bound")
    return partly, unbound


def overcommitted(pods: list[Pod], nodes: list[Node]) -> list[str]:
    """Nodes whose bound, non-terminal pods ask for more than the node has (cpu, memory,
    GPUs, pod count): a scheduler that lost track of placements after a restart."""
    used: dict[str, Counter[str]] = {}
    for p in pods:
        if not p.spec.node_name or p.is_terminal:
            continue
        use = used.setdefault(p.spec.node_name, Counter())
        use["pods"] += 1
        for c in p.spec.containers:
            for res, q in parse_resources(c.resources.requests if c.resources else None).items():
                use[res] += q
    out = []
    for n in nodes:
        have = parse_resources(n.status.allocatable)
        for res, q in used.get(n.name, Counter()).items():
            if q > have.get(res, 0.0) + 1e-9:
                out.append(f"node {n.name}: {res} {q:g} requested > {have.get(res, 0.0):g} allocatable")
    return out


def packed(pods: list[Pod], nodes: list[Node], gang: str, key: str) -> bool:
    """Whether every bound pod of PodGang `gang` sits in one domain of node label `key`."""
    domain = {n.name: n.metadata.labels.get(key) for n in nodes}
    seen = {domain.get(p.spec.node_name or "") for p in pods
            if p.metadata.labels.get(labels.LABEL_PODGANG) == gang and p.spec.node_name}
    return len(seen) <= 1


def derived_left(state: dict[type[Resource], list[Resource]]) -> list[str]:
    """Derived objects still stored (after every PodCliqueSet was deleted). What an input
    that stays owns (a KAI Topology mirroring its ClusterTopology) is not left behind."""
    def of_workload(o: Resource) -> bool:
        return not any(ref.kind in _NOT_DERIVED for ref in o.metadata.owner_references or ())

    out = []
    for kind, items in state.items():
        left = [o for o in items if of_workload(o)] if kind.KIND not in _NOT_DERIVED else []
        if left:
            out.append(f"{kind.API_VERSION} {kind.KIND}: {len(left)} left ({left[0].key}, ...)")
    return out


# ---------------------------------------------------------------------- normal form

_VOLATILE_KEYS = {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                  "generateName", "managedFields", "startedAt", "finishedAt", "observedAt",
                  "lastTransitionTime", "startTime"}


def _strip(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, k) for k, v in sorted(value.items())
                if k not in _VOLATILE_KEYS and not k.endswith(("Time", "Timestamp"))}
    if isinstance(value, list):
        items = [_strip(v) for v in value]
        if key == "conditions":  # a map keyed by type (listMapKey): order means nothing
            items.sort(key=lambda c: str(c.get("type")) if isinstance(c, dict) else "")
        return items
    return value


def normal_form(state: dict[type[Resource], list[Resource]], *,
                placement: bool) -> dict[str, dict[str, Any]]:
    """Every derived object and PodCliqueSet, by kind and key, without what may legitimately
    differ between two runs (uids, resourceVersions, timestamps; node names unless
    `placement`). Events and Leases are left out (their count depends on timing). Pods have
    generated names, which depend on the order of creates: a pod is keyed and named by its
    hostname (`<podclique>-<index>`), and so are references to it (PodGang podReferences)."""
    out: dict[str, dict[str, Any]] = {}
    hostnames = {p.name: p.spec.hostname for p in state.get(Pod, ())  # type: ignore[attr-defined]
                 if p.spec.hostname}  # type: ignore[attr-defined]
    for kind, items in state.items():
        if kind in (Event, Lease, Node):
            continue
        label = f"{kind.API_VERSION}/{kind.KIND}"
        for o in items:
            d = _by_hostname(_strip(o.to_dict()), hostnames)
            if kind is Pod and not placement:
                d.get("spec", {}).pop("nodeName", None)
            key = o.key
            if kind is Pod and o.name in hostnames:
                key = f"{o.metadata.namespace}/{hostnames[o.name]}"
            out.setdefault(label, {})[key] = d
    return out


def _by_hostname(value: Any, hostnames: dict[str, str]) -> Any:
    """`value` with every string that is a pod's generated name replaced by its hostname."""
    if isinstance(value, dict):
        return {k: _by_hostname(v, hostnames) for k, v in value.items()}
    if isinstance(value, list):
        return [_by_hostname(v, hostnames) for v in value]
    if isinstance(value, str):
        return hostnames.get(value, value)
    return value


def diff_states(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]],
                limit: int = 10) -> list[str]:
    """Human-readable differences between two normal forms (at most `limit`)."""
    out: list[str] = []
    for kind in sorted(set(a) | set(b)):
        ka, kb = a.get(kind, {}), b.get(kind, {})
        for key in sorted(set(ka) - set(kb))[:limit]:
            out.append(f"{kind} {key}: only in the first run")
        for key in sorted(set(kb) - set(ka))[:limit]:
            out.append(f"{kind} {key}: only in the second run")
        for key in sorted(set(ka) & set(kb)):
            if ka[key] != kb[key]:
                out.append(f"{kind} {key}: {_first_difference(ka[key], kb[key])}")
            if len(out) >= limit:
                return out
    return out


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path or '.'}: {a!r} != {b!r}"


__all__ = ["PodCliqueSet", "create_retrying", "delete_retrying", "derived_left", "diff_states",
           "duplicate_pods", "env_int", "everything", "gang_binding", "normal_form", "orphans",
           "overcommitted", "packed"]
