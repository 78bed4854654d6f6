"""grove.io/v1alpha1 topology: ClusterTopologyBinding (Grove's current API), the legacy
ClusterTopology, and the topology constraints a PodCliqueSet writes.

A ClusterTopologyBinding (cluster-scoped, short name `ct`) lists the cluster's topology
levels broadest first, each a domain name and the node-label key that identifies it, and
says per scheduler backend whether the operator manages that backend's topology object
(absent from `schedulerTopologyBindings`) or only checks an existing one for drift (named
there). Its status reports each backend's object as in sync or not, and the condition
`SchedulerTopologyDrift`.

The older `ClusterTopology` (same levels, no binding, no status) is still read, as a legacy
input, when no ClusterTopologyBinding of that name exists; it has no short name, so its CRD
and Grove's ClusterTopologyBinding CRD can be installed side by side.

A constraint names its topology with `topologyName`, as Grove does: a constrained level
without one inherits it from the constraint above it (the PodCliqueSet's for everything, a
scaling group's for its cliques); a top-level constraint must say it
(`effective_topology_name`). There is no "the only topology in the cluster" fallback.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, ClassVar

from pydantic import ConfigDict, Field, StringConstraints

from .base import Condition, KubeModel, Resource, _is_empty
from .crdtypes import Int64, rule, validations
from .errors import PATTERN_HINTS

GROVE_API_VERSION = "grove.io/v1alpha1"

# Grove's well-known domains, broadest first. Custom lower-case names are allowed too.
TOPOLOGY_DOMAINS = ("region", "zone", "datacenter", "block", "rack", "host", "numa")
DOMAIN_PATTERN = r"^[a-z][a-z0-9-]*$"
PATTERN_HINTS[DOMAIN_PATTERN] = (
    "a topology domain is lower-case letters, digits and '-', starting with a letter "
    f"(e.g. {', '.join(TOPOLOGY_DOMAINS)})"
)
LEVEL_KEY_PATTERN = (r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]/)?"
                     r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
PATTERN_HINTS[LEVEL_KEY_PATTERN] = (
    "a node label key: an optional DNS prefix and '/', then letters, digits, '-', '_' or '.', "
    "starting and ending with a letter or digit (e.g. topology.kubernetes.io/zone)"
)
TopologyDomain = Annotated[
    str, StringConstraints(min_length=1, max_length=63, pattern=DOMAIN_PATTERN)
]

# Condition on a ClusterTopologyBinding, its reasons, and the Events on its transitions.
SCHEDULER_TOPOLOGY_DRIFT = "SchedulerTopologyDrift"
REASON_IN_SYNC = "InSync"
REASON_DRIFT = "Drift"
REASON_TOPOLOGY_NOT_FOUND = "TopologyNotFound"
EVENT_DRIFT_DETECTED = "TopologyDriftDetected"
EVENT_IN_SYNC = "TopologyInSync"


# --- constraints on a PodCliqueSet ------------------------------------------------------------


class TopologyPackConstraint(KubeModel):
    model_config = ConfigDict(json_schema_extra=validations(rule(
        "has(self.required) || has(self.preferred)",
        "pack must specify at least one of required or preferred", reason="FieldValueRequired")))

    required: TopologyDomain | None = None
    preferred: TopologyDomain | None = None


class TopologyConstraint(KubeModel):
    """Where each replica of a PCS / scaling group / clique must be packed.

    `packDomain` is Grove's original field (a required domain), deprecated: new workloads
    write `pack.required` (and `pack.preferred`). Objects created with `packDomain` keep it
    on update, and may move it to `pack.required`.
    """

    model_config = ConfigDict(json_schema_extra=validations(
        rule("has(self.pack) || has(self.packDomain)",
             "topologyConstraint must specify pack or deprecated packDomain",
             reason="FieldValueRequired", field_path=".pack"),
        rule("!(has(self.packDomain) && has(self.pack) && has(self.pack.required))",
             "must not set both pack.required and deprecated packDomain",
             field_path=".pack.required"),
    ))

    topology_name: str | None = None
    pack: TopologyPackConstraint | None = None
    pack_domain: TopologyDomain | None = None

    @property
    def required_domain(self) -> str | None:
        if self.pack is not None and self.pack.required:
            return self.pack.required
        return self.pack_domain

    @property
    def preferred_domain(self) -> str | None:
        return self.pack.preferred if self.pack is not None else None

    def referenced_domains(self) -> list[str]:
        out = [d for d in (self.required_domain, self.preferred_domain) if d]
        return list(dict.fromkeys(out))


# --- the cluster's topology -------------------------------------------------------------------


class TopologyLevel(KubeModel):
    domain: TopologyDomain
    key: Annotated[str, StringConstraints(min_length=1, max_length=63,
                                          pattern=LEVEL_KEY_PATTERN)]


class _Levels:
    """Lookups shared by ClusterTopologyBinding and the legacy ClusterTopology."""

    spec: Any

    def key_for(self, domain: str) -> str | None:
        """The node-label key of a domain ("rack" -> "topology.kubernetes.io/rack")."""
        for level in self.spec.levels:
            if level.domain == domain:
                return level.key
        return None

    def domains(self) -> list[str]:
        return [level.domain for level in self.spec.levels]


class SchedulerTopologyBinding(KubeModel):
    """A backend's topology object that an admin manages: the operator only checks it."""

    scheduler_name: str
    topology_reference: str


class SchedulerTopologyStatus(SchedulerTopologyBinding):
    in_sync: bool
    scheduler_backend_topology_observed_generation: Int64 | None = None
    message: str | None = None


class ClusterTopologyBindingSpec(KubeModel):
    levels: list[TopologyLevel] = Field(min_length=1)
    scheduler_topology_bindings: list[SchedulerTopologyBinding] | None = None

    def binding_for(self, scheduler: str) -> SchedulerTopologyBinding | None:
        for ref in self.scheduler_topology_bindings or ():
            if ref.scheduler_name == scheduler:
                return ref
        return None


class ClusterTopologyBindingStatus(KubeModel):
    observed_generation: Int64 | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)
    scheduler_topology_statuses: list[SchedulerTopologyStatus] | None = None


class ClusterTopologyBinding(_Levels, Resource):
    """The cluster's topology hierarchy and its binding to each backend's topology object."""

    API_VERSION = GROVE_API_VERSION
    KIND = "ClusterTopologyBinding"
    PLURAL = "clustertopologybindings"
    SHORT_NAMES = ("ct",)
    NAMESPACED = False
    HAS_STATUS = True
    PRINTER_COLUMNS: ClassVar[tuple[dict[str, object], ...]] = (
        {"name": "Domains", "type": "string", "jsonPath": ".spec.levels[*].domain"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    spec: ClusterTopologyBindingSpec
    status: ClusterTopologyBindingStatus = Field(default_factory=ClusterTopologyBindingStatus)


class ClusterTopologySpec(KubeModel):
    levels: list[TopologyLevel] = Field(min_length=1, max_length=7)


class ClusterTopology(_Levels, Resource):
    """Legacy: Grove's topology before ClusterTopologyBinding (cluster-scoped, no status).
    Read only where no ClusterTopologyBinding of the same name exists."""

    API_VERSION = GROVE_API_VERSION
    KIND = "ClusterTopology"
    PLURAL = "clustertopologies"
    NAMESPACED = False
    PRINTER_COLUMNS: ClassVar[tuple[dict[str, object], ...]] = (
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    spec: ClusterTopologySpec


# Either kind: what topology lookups return.
AnyTopology = ClusterTopologyBinding | ClusterTopology


# --- which topology a PodCliqueSet names ------------------------------------------------------


class TopologyNameError(ValueError):
    """The PodCliqueSet's topology constraints do not resolve to one topologyName."""

    def __init__(self, field: str, message: str, *, missing: bool) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.missing = missing  # True: a constraint has no explicit or inherited name


_T = "spec.template"


def constraints_with_paths(pcs: Any) -> Iterator[tuple[str, TopologyConstraint]]:
    """(field path, constraint) at every level, PodCliqueSet first, then cliques, then
    scaling groups (Grove's order)."""
    t = pcs.spec.template
    if t.topology_constraint is not None:
        yield f"{_T}.topologyConstraint", t.topology_constraint
    for i, c in enumerate(t.cliques):
        if c.topology_constraint is not None:
            yield f"{_T}.cliques[{i}].topologyConstraint", c.topology_constraint
    for i, g in enumerate(t.pod_clique_scaling_groups or ()):
        if g.topology_constraint is not None:
            yield f"{_T}.podCliqueScalingGroups[{i}].topologyConstraint", g.topology_constraint


def effective_topology_errors(pcs: Any) -> tuple[str | None, list[TopologyNameError]]:
    """The one topologyName every constraint resolves to (None when there is no
    constraint), and every error: a constraint whose name is neither written nor inherited
    (from the PodCliqueSet's constraint, or a scaling group's for its cliques), and, when
    the names differ, every explicit name."""
    t = pcs.spec.template
    errors: list[TopologyNameError] = []
    seen: list[str] = []

    def resolve(tc: TopologyConstraint, path: str, inherited: str | None) -> str | None:
        if tc.topology_name:
            if inherited and tc.topology_name != inherited:
                errors.append(_conflict(f"{path}.topologyName"))
                return None
            seen.append(tc.topology_name)
            return tc.topology_name
        if inherited:
            seen.append(inherited)
            return inherited
        errors.append(TopologyNameError(
            f"{path}.topologyName", "topologyName is required when topologyConstraint is set "
            "and cannot be inherited", missing=True))
        return None

    top = None
    if t.topology_constraint is not None:
        top = resolve(t.topology_constraint, f"{_T}.topologyConstraint", None)
    by_clique: dict[str, str] = {}
    for i, g in enumerate(t.pod_clique_scaling_groups or ()):
        if g.topology_constraint is None:
            continue
        name = resolve(g.topology_constraint, f"{_T}.podCliqueScalingGroups[{i}]"
                                              ".topologyConstraint", top)
        for clique in g.clique_names if name else ():
            by_clique.setdefault(clique, name)
    for i, c in enumerate(t.cliques):
        if c.topology_constraint is not None:
            resolve(c.topology_constraint, f"{_T}.cliques[{i}].topologyConstraint",
                    by_clique.get(c.name, top))
    if len(set(seen)) > 1:
        errors += [_conflict(f"{path}.topologyName")
                   for path, tc in constraints_with_paths(pcs) if tc.topology_name]
    if errors:
        return None, errors
    return (seen[0] if seen else None), []


def _conflict(field: str) -> TopologyNameError:
    return TopologyNameError(field, "all topologyConstraint.topologyName values within a "
                                    "PodCliqueSet must match in the current implementation",
                             missing=False)


def explicit_topology_name(pcs: Any) -> str | None:
    """The first topologyName written on the PodCliqueSet (PodCliqueSet, scaling groups,
    cliques), for objects admission already checked; None when none is written."""
    t = pcs.spec.template
    found = [t.topology_constraint, *(g.topology_constraint for g in
                                      t.pod_clique_scaling_groups or ()),
             *(c.topology_constraint for c in t.cliques)]
    return next((tc.topology_name for tc in found if tc is not None and tc.topology_name), None)


__all__ = [
    "DOMAIN_PATTERN", "EVENT_DRIFT_DETECTED", "EVENT_IN_SYNC", "GROVE_API_VERSION",
    "REASON_DRIFT", "REASON_IN_SYNC", "REASON_TOPOLOGY_NOT_FOUND", "SCHEDULER_TOPOLOGY_DRIFT",
    "TOPOLOGY_DOMAINS", "AnyTopology", "ClusterTopology", "ClusterTopologyBinding",
    "ClusterTopologyBindingSpec", "ClusterTopologyBindingStatus", "ClusterTopologySpec",
    "SchedulerTopologyBinding", "SchedulerTopologyStatus", "TopologyConstraint",
    "TopologyLevel", "TopologyNameError", "TopologyPackConstraint", "constraints_with_paths",
    "effective_topology_errors", "explicit_topology_name",
]
