"""PodCliqueSet admission: defaulting and validation, as Grove's CRD rules and webhooks do.

Pure functions a mutating / validating webhook can call:
    default_podcliqueset(pcs) -> pcs                     (in place)
    validate_podcliqueset(pcs, old) -> [(field, message)] (empty when valid)
and `install_admission(cluster, registry, topology_aware=...)` to run them, the topology
rules that read ClusterTopologyBindings (admission_topology.py) and the backends' check on
every create and update of a PodCliqueSet in a MemoryCluster (or the webhook's chain).
Messages name the field as users write it (camelCase paths) and say what is wrong and what
is allowed.

Grove fields Phalanx holds but does not act on yet are refused by name, never admitted and
ignored. Autoscaling `metrics` are checked as the HPA's API server checks them
(admission_metrics.py) and go to the HorizontalPodAutoscaler (operator/hpa.py); the
autoscaling bounds in admission_autoscaling.py. Labels and annotations: admission_meta.py;
what an update may not change: admission_update.py; resource sharing:
admission_resourcesharing.py; env var names: admission_env.py; PriorityClasses that must
exist: admission_priority.py (needs a client).
"""

from __future__ import annotations

import re
from typing import Any

from phalanx.api.duration import parse_duration
from phalanx.api.grove import ClusterTopologyBinding, PodCliqueSet
from phalanx.api.grove import default_podcliqueset as _grove_defaults
from phalanx.backends.admission import check_podcliqueset
from phalanx.backends.registry import BackendRegistry
from phalanx.backends.topology import get_topology
from phalanx.cluster.client import Invalid
from phalanx.cluster.podvalidation import pod_spec_errors
from phalanx.cluster.podvalidation.fielderrors import duplicate, invalid

from .admission_autoscaling import autoscaling_errors
from .admission_env import env_errors
from .admission_meta import metadata_errors
from .admission_metrics import metrics_errors
from .admission_mnnvl import mnnvl_errors
from .admission_priority import priority_class_errors, written_priority_errors
from .admission_queue import queue_errors
from .admission_resourcesharing import resource_sharing_errors
from .admission_topology import DomainLookup, binding_errors, cel_errors, webhook_errors
from .admission_update import NODE_NAME, update_errors
from .naming import MAX_COMBINED_NAME_LENGTH
from .plan import STARTUP_EXPLICIT

FieldErrors = list[tuple[str, str]]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_T = "spec.template"


def default_podcliqueset(pcs: PodCliqueSet) -> PodCliqueSet:
    """Grove's defaults, in place: cliqueStartupType AnyOrder, terminationDelay 4h, a clique's
    replicas 0 -> 1 with minAvailable and autoScalingConfig.minReplicas = replicas as written,
    each scaling group's replicas and minAvailable 1 and scaleConfig.minReplicas = replicas,
    pods' restartPolicy Always and terminationGracePeriodSeconds 30, namespace "default"."""
    _grove_defaults(pcs)
    if not pcs.metadata.namespace:
        pcs.metadata.namespace = "default"
    for clique in pcs.spec.template.cliques:
        spec = clique.spec.pod_spec
        if spec.restart_policy is None:
            spec.restart_policy = "Always"
        if spec.termination_grace_period_seconds is None:
            spec.termination_grace_period_seconds = 30
    return pcs


def _label_error(value: str, what: str) -> str | None:
    if not value:
        return f"{what} must not be empty"
    if len(value) > 63 or not _DNS_LABEL.match(value):
        return (f"{what} {value!r} must be a DNS label: at most 63 lower-case letters, digits "
                "or '-', starting and ending with a letter or digit")
    return None


def validate_podcliqueset(pcs: PodCliqueSet, old: PodCliqueSet | None = None) -> FieldErrors:
    """Every problem with a (defaulted) PodCliqueSet; `old` is the stored one on update."""
    errs: FieldErrors = []
    name = pcs.metadata.name or ""
    if (why := _label_error(name, "name")) is not None:
        errs.append(("metadata.name", why))
    if pcs.spec.replicas < 0:
        errs.append(("spec.replicas", f"must be >= 0, got {pcs.spec.replicas}"))
    t = pcs.spec.template
    if not t.cliques:
        errs.append((f"{_T}.cliques", "at least one clique is required"))
    errs.extend(cel_errors(pcs, old))
    clique_names: dict[str, int] = {}
    roles: dict[str, int] = {}
    errs.extend(metadata_errors(pcs))
    for i, c in enumerate(t.cliques):
        _check_clique(pcs, i, c, clique_names, errs, creating=old is None)
        if c.spec.role_name in roles:
            errs.append((f"{_T}.cliques[{i}].spec.roleName",
                         f"Duplicate value: {c.spec.role_name!r} (also cliques"
                         f"[{roles[c.spec.role_name]}]); roleName must be unique"))
        roles.setdefault(c.spec.role_name, i)
    _check_startup(pcs, clique_names, errs)
    _check_groups(pcs, clique_names, errs)
    errs.extend(unsupported_fields(pcs))
    errs.extend(env_errors(pcs))
    errs.extend(metrics_errors(pcs))
    errs.extend(autoscaling_errors(pcs))
    errs.extend(resource_sharing_errors(pcs, old))
    delay = t.termination_delay
    if delay is not None:
        try:
            if parse_duration(delay) <= 0:
                errs.append((f"{_T}.terminationDelay", f"must be a positive duration, got "
                                                       f"{delay!r}"))
        except ValueError as err:
            errs.append((f"{_T}.terminationDelay", str(err)))
    if old is not None:
        errs.extend(update_errors(pcs, old))
    return errs



def unsupported_fields(pcs: PodCliqueSet) -> FieldErrors:
    """Grove fields Phalanx would otherwise accept and ignore, refused by name."""
    t = pcs.spec.template
    errs: FieldErrors = []
    return errs


def _check_clique(pcs: PodCliqueSet, i: int, c: Any, seen: dict[str, int],
                  errs: FieldErrors, *, creating: bool) -> None:
    at = f"{_T}.cliques[{i}]"
    if (why := _label_error(c.name, "clique name")) is not None:
        errs.append((f"{at}.name", why))
    elif c.name in seen:
        errs.append((f"{at}.name", f"duplicate clique name {c.name!r} (also cliques"
                                   f"[{seen[c.name]}]); clique names must be unique"))
    else:
        seen[c.name] = i
    if len(pcs.name) + len(c.name) > MAX_COMBINED_NAME_LENGTH:
        errs.append((f"{at}.name", f"the PodCliqueSet name and clique name together are "
                                   f"{len(pcs.name) + len(c.name)} characters; at most "
                                   f"{MAX_COMBINED_NAME_LENGTH} are allowed so generated pod "
                                   "names stay valid hostnames"))
    spec = c.spec
    if spec.replicas < 1:
        errs.append((f"{at}.spec.replicas", f"must be >= 1, got {spec.replicas}"))
    if spec.min_available is not None:
        if spec.min_available < 1:
            hint = (" (it defaults to the clique's replicas as written: set replicas, or "
                    "minAvailable, to at least 1)" if spec.min_available == 0 else "")
            errs.append((f"{at}.spec.minAvailable",
                         f"must be >= 1, got {spec.min_available}{hint}"))
        elif spec.min_available > spec.replicas:
            errs.append((f"{at}.spec.minAvailable",
                         f"minAvailable ({spec.min_available}) must not exceed replicas "
                         f"({spec.replicas})"))
    if not spec.pod_spec.containers:
        errs.append((f"{at}.spec.podSpec.containers", "at least one container is required"))
    if creating:  # Grove's validatePodSpec, on create (an update: admission_update.py)
        if spec.pod_spec.topology_spread_constraints is not None:
            errs.append(invalid(f"{at}.spec.podSpec.topologySpreadConstraints",
                                spec.pod_spec.topology_spread_constraints, NODE_NAME))
        if spec.pod_spec.node_name:
            errs.append(invalid(f"{at}.spec.podSpec.nodeName", spec.pod_spec.node_name,
                                NODE_NAME))
    # The pods must pass the API server's own validation, or every creation fails later.
    errs.extend(pod_spec_errors(spec.pod_spec, f"{at}.spec.podSpec"))


def _check_startup(pcs: PodCliqueSet, names: dict[str, int], errs: FieldErrors) -> None:
    t = pcs.spec.template
    explicit = t.clique_startup_type == STARTUP_EXPLICIT
    graph: dict[str, list[str]] = {}
    for i, c in enumerate(t.cliques):
        after = c.spec.starts_after or []
        at = f"{_T}.cliques[{i}].spec.startsAfter"
        if after and not explicit:
            errs.append((at, "startsAfter is only allowed with cliqueStartupType "
                             f"{STARTUP_EXPLICIT} (got {t.clique_startup_type})"))
            continue
        for j, parent in enumerate(after):
            if parent in after[:j]:
                errs.append(duplicate(f"{at}[{j}]", parent))
            elif parent == c.name:
                errs.append((f"{at}[{j}]", f"clique {c.name!r} cannot start after itself"))
            elif parent not in names:
                errs.append((f"{at}[{j}]", f"unknown clique {parent!r}; known cliques: "
                                           f"{', '.join(sorted(names))}"))
        graph[c.name] = [p for p in after if p in names and p != c.name]
    cycle = _find_cycle(graph)
    if cycle:
        i = names[cycle[0]]
        errs.append((f"{_T}.cliques[{i}].spec.startsAfter",
                     "startsAfter forms a cycle: " + " -> ".join([*cycle, cycle[0]])))


def _find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """A dependency cycle (as a path), found by depth-first search in spec order."""
    state: dict[str, int] = {}  # 1 visiting, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                return path[path.index(nxt):]
            if state.get(nxt) is None and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in graph:
        if state.get(node) is None and (found := visit(node)) is not None:
            return found
    return None


def _check_groups(pcs: PodCliqueSet, cliques: dict[str, int], errs: FieldErrors) -> None:
    seen: dict[str, int] = {}
    member_of: dict[str, str] = {}
    for i, g in enumerate(pcs.spec.template.pod_clique_scaling_groups or ()):
        at = f"{_T}.podCliqueScalingGroups[{i}]"
        if (why := _label_error(g.name, "scaling group name")) is not None:
            errs.append((f"{at}.name", why))
        elif g.name in seen:
            errs.append((f"{at}.name", f"duplicate scaling group name {g.name!r}"))
        else:
            seen[g.name] = i
        for j, clique in enumerate(g.clique_names):
            if clique not in cliques:
                errs.append((f"{at}.cliqueNames[{j}]",
                             f"names clique {clique!r}, which is not in {_T}.cliques "
                             f"(known: {', '.join(sorted(cliques))})"))
            elif clique in member_of:
                errs.append((f"{at}.cliqueNames[{j}]",
                             f"clique {clique!r} is already in scaling group "
                             f"{member_of[clique]!r}; a clique belongs to at most one group"))
            else:
                member_of[clique] = g.name
            if len(pcs.name) + len(g.name) + len(clique) > MAX_COMBINED_NAME_LENGTH:
                errs.append((f"{at}.name", "the PodCliqueSet, scaling group and clique names "
                                           f"together exceed {MAX_COMBINED_NAME_LENGTH} "
                                           "characters"))
        replicas = g.replicas if g.replicas is not None else 1
        floor = g.min_available if g.min_available is not None else 1
        if replicas < 0:
            errs.append((f"{at}.replicas", f"must be >= 0, got {replicas}"))
        if floor < 1:
            errs.append((f"{at}.minAvailable", f"must be >= 1, got {floor}"))
        elif floor > replicas:
            errs.append((f"{at}.minAvailable",
                         f"minAvailable ({floor}) must not exceed replicas ({replicas})"))


# --- wiring into MemoryCluster ----------------------------------------------------------------

# The registry admission checks against is kept on the cluster object itself: a module-level
# WeakKeyDictionary keyed by the cluster leaked every cluster, because its value (backends ->
# their clients) refers back to the key.
_REGISTRY_ATTR = "_phalanx_admission_registry"


def check_all(pcs: PodCliqueSet, old: PodCliqueSet | None,
              registry: BackendRegistry | None) -> FieldErrors:
    """Phalanx's validation plus the scheduler backend's (unknown or mixed schedulerNames,
    features the backend rejects); not the topology rules that read the cluster."""
    errs = validate_podcliqueset(pcs, old)
    if registry is not None and not errs:
        check = check_podcliqueset(pcs, old, registry)
        errs.extend((e.field, e.message) for e in check.errors)
    return errs


def topology_lookup(client: Any) -> DomainLookup:
    """The domains of the ClusterTopologyBinding (else legacy ClusterTopology) a name
    names, read from `client`."""

    async def lookup(name: str) -> list[str] | None:
        found = await get_topology(client, name)
        return found.domains() if found is not None else None

    return lookup


def install_admission(cluster: Any, registry: BackendRegistry | None, *,
                      topology_aware: bool | None = None, client: Any = None,
                      auto_mnnvl: bool = False) -> None:
    """Run PodCliqueSet defaulting and validation on every create and update in `cluster`
    (anything with `register_admission`: a MemoryCluster, or the webhook's chain).
    `topology_aware` (the OperatorConfiguration's topologyAwareScheduling.enabled) turns on
    Grove's topology webhook rules, which read ClusterTopologyBindings through `client`
    (default: `cluster` itself); None leaves them out. `auto_mnnvl`: network.autoMNNVLEnabled
    (off: the grove.io/mnnvl-group annotation is refused). Idempotent per cluster."""
    if hasattr(cluster, _REGISTRY_ATTR):
        setattr(cluster, _REGISTRY_ATTR, registry or getattr(cluster, _REGISTRY_ATTR))
        return
    setattr(cluster, _REGISTRY_ATTR, registry)
    reader = client if client is not None else cluster
    lookup = topology_lookup(reader) if hasattr(reader, "get") else None

    def mutate(obj: PodCliqueSet, old: PodCliqueSet | None) -> PodCliqueSet:
        return default_podcliqueset(obj)

    async def validate(obj: PodCliqueSet, old: PodCliqueSet | None) -> list[str]:
        errs = validate_podcliqueset(obj, old)
        warnings: list[str] = []
        errs += mnnvl_errors(obj, old, enabled=auto_mnnvl)  # admission_mnnvl.py
        if topology_aware is not None:
            errs += await webhook_errors(obj, old, enabled=topology_aware, lookup=lookup)
        if not errs and hasattr(reader, "get"):  # admission_priority.py
            errs += await priority_class_errors(obj, old, reader)
            if not errs and hasattr(reader, "list"):
                errs += await written_priority_errors(obj, reader)
        registry = getattr(cluster, _REGISTRY_ATTR, None)
        if registry is not None and not errs:
            check = check_podcliqueset(obj, old, registry)
            errs.extend((e.field, e.message) for e in check.errors)
            if not errs and hasattr(reader, "get"):  # admission_queue.py
                errs += await queue_errors(obj, old, reader, check.backend)
            # Admitted but not honoured (best-effort, or the backend's mismatch policy):
            # said now, as webhook warnings, and later in the SchedulerCompatible condition.
            warnings = [f"{i.field}: {i.message} (ignored)" for i in check.ignored]
        if errs:
            detail = "; ".join(f"{field}: {message}" for field, message in errs)
            raise Invalid(f'PodCliqueSet "{obj.name}" is invalid: {detail}',
                          kind=PodCliqueSet.KIND, name=obj.name, field=errs[0][0])
        return warnings

    cluster.register_admission(PodCliqueSet, mutate=mutate, validate=validate)

    def validate_binding(obj: ClusterTopologyBinding, old: ClusterTopologyBinding | None) -> None:
        registry = getattr(cluster, _REGISTRY_ATTR, None)
        backends = registry.enabled() if registry is not None else []
        errs = binding_errors(obj, [b.name for b in backends],
                              [b.name for b in backends
                               if getattr(b, "sync_cluster_topology", None) is not None])
        if errs:
            detail = "; ".join(f"{field}: {message}" for field, message in errs)
            raise Invalid(f'ClusterTopologyBinding "{obj.name}" is invalid: {detail}',
                          kind=ClusterTopologyBinding.KIND, name=obj.name, field=errs[0][0])

    cluster.register_admission(ClusterTopologyBinding, validate=validate_binding)
