"""core/v1 Pod: the object created 100k at a time, so it is kept cheap.

No Python-level validators: every check here runs inside pydantic-core (types, Literals,
regex patterns). Fields the control plane never interprets (probes, volumes, security
contexts, ...) are opaque dicts, so realistic kubectl pod templates load and round-trip
unchanged. Resource quantities keep the form the user wrote ("500m"); `resource_requests()`
gives floats, computed once per PodSpec.
"""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import Field, StrictFloat, StrictInt, StringConstraints

from .base import Condition, KubeModel, Resource, _is_empty, get_condition, set_condition
from .quantity import QUANTITY_PATTERN, overcommit_allowed, parse_quantity

# A quantity as written: "500m", "16Gi", 2, 0.5. The pattern check runs in Rust.
QuantityString = Annotated[str, StringConstraints(pattern=QUANTITY_PATTERN)]
QuantityValue = QuantityString | StrictInt | StrictFloat
ResourceList = dict[str, QuantityValue]
Opaque = dict[str, Any]

DEFAULT_SCHEDULER = "default-scheduler"

PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]
NodeSelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class ResourceRequirements(KubeModel):
    requests: ResourceList | None = None
    limits: ResourceList | None = None
    claims: list[Opaque] | None = None

    @classmethod
    def from_requests(cls, requests: dict[str, Any]) -> ResourceRequirements:
        """`requests`, plus the equal limits the API server demands for resources that
        cannot be overcommitted (GPUs and other extended resources, hugepages)."""
        limits = {k: v for k, v in requests.items() if not overcommit_allowed(k)}
        return cls(requests=dict(requests) or None, limits=limits or None)


class EnvVar(KubeModel):
    name: str
    value: str | None = None
    value_from: Opaque | None = None


class ContainerPort(KubeModel):
    container_port: int
    name: str | None = None
    protocol: Literal["TCP", "UDP", "SCTP"] | None = None
    host_port: int | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")


class Container(KubeModel):
    name: str
    image: str | None = None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = None
    ports: list[ContainerPort] | None = None
    env: list[EnvVar] | None = None
    env_from: list[Opaque] | None = None
    resources: ResourceRequirements | None = None
    resize_policy: list[Opaque] | None = None
    # "Always" on an init container makes it a sidecar (KEP-753).
    restart_policy: str | None = None
    restart_policy_rules: list[Opaque] | None = None
    volume_mounts: list[Opaque] | None = None
    volume_devices: list[Opaque] | None = None
    liveness_probe: Opaque | None = None
    readiness_probe: Opaque | None = None
    startup_probe: Opaque | None = None
    lifecycle: Opaque | None = None
    termination_message_path: str | None = None
    termination_message_policy: str | None = None
    security_context: Opaque | None = None
    stdin: bool | None = None
    stdin_once: bool | None = None
    tty: bool | None = None

    def effective_requests(self) -> dict[str, float]:
        """Requests as floats; a resource with only a limit requests the limit (API defaulting)."""
        res = self.resources
        if res is None:
            return {}
        out = {k: parse_quantity(v) for k, v in (res.limits or {}).items()}
        for k, v in (res.requests or {}).items():
            out[k] = parse_quantity(v)
        return out


class NodeSelectorRequirement(KubeModel):
    key: str
    operator: NodeSelectorOperator
    values: list[str] | None = None


class NodeSelectorTerm(KubeModel):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(KubeModel):
    node_selector_terms: list[NodeSelectorTerm]


class PreferredSchedulingTerm(KubeModel):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )


class Affinity(KubeModel):
    node_affinity: NodeAffinity | None = None
    # Inter-pod (anti-)affinity is kept as written; the scheduler plugins that need it parse it.
    pod_affinity: Opaque | None = None
    pod_anti_affinity: Opaque | None = None


class Toleration(KubeModel):
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: TaintEffect | None = None
    toleration_seconds: int | None = None


class PodSchedulingGate(KubeModel):
    name: str


class WorkloadReference(KubeModel):
    """spec.workloadRef (Kubernetes 1.35, KEP-4671): the Workload pod group a pod belongs to."""

    name: str
    pod_group: str
    pod_group_replica_key: str | None = None


class PodSchedulingGroup(KubeModel):
    """spec.schedulingGroup (Kubernetes 1.36+): the standalone PodGroup a pod belongs to."""

    pod_group_name: str


class PodSpec(KubeModel):
    containers: list[Container] = Field(min_length=1)
    init_containers: list[Container] | None = None
    ephemeral_containers: list[Opaque] | None = None
    # None = unset. A pod template that names no scheduler gets the operator's default
    # profile; a Pod is defaulted to default-scheduler by the API server (see
    # `Pod.scheduler_name`), so "unset" and "default-scheduler" stay distinguishable here.
    scheduler_name: str | None = None
    scheduling_gates: list[PodSchedulingGate] = Field(default_factory=list, exclude_if=_is_empty)
    node_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    topology_spread_constraints: list[Opaque] | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = None
    restart_policy: Literal["Always", "OnFailure", "Never"] | None = None
    termination_grace_period_seconds: int | None = None
    active_deadline_seconds: int | None = None
    service_account_name: str | None = None
    service_account: str | None = None
    automount_service_account_token: bool | None = None
    hostname: str | None = None
    subdomain: str | None = None
    set_hostname_as_fqdn: bool | None = Field(default=None, alias="setHostnameAsFQDN")
    host_network: bool | None = None
    host_pid: bool | None = Field(default=None, alias="hostPID")
    host_ipc: bool | None = Field(default=None, alias="hostIPC")
    host_users: bool | None = None
    share_process_namespace: bool | None = None
    host_aliases: list[Opaque] | None = None
    dns_policy: str | None = None
    dns_config: Opaque | None = None
    security_context: Opaque | None = None
    image_pull_secrets: list[Opaque] | None = None
    readiness_gates: list[Opaque] | None = None
    runtime_class_name: str | None = None
    enable_service_links: bool | None = None
    os: Opaque | None = None
    overhead: ResourceList | None = None
    resources: ResourceRequirements | None = None  # pod-level resources (KEP-2837)
    resource_claims: list[Opaque] | None = None
    volumes: list[Opaque] | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_group: PodSchedulingGroup | None = None

    @cached_property
    def total_requests(self) -> dict[str, float]:
        """What the pod asks a node for, as kube-scheduler computes it (resourcehelper.PodRequests).

        Sum of the app containers; each init container runs alone, so the pod needs at least
        the largest of them (plus the sidecars started before it); sidecars (init containers
        with restartPolicy Always) run alongside everything; then pod overhead. Pod-level
        resources, when set, replace the container aggregate for the resources they name.
        Computed once and cached: treat the result as read-only and call
        `invalidate_requests()` after changing container resources in place.
        """
        reqs: dict[str, float] = {}
        for c in self.containers:
            for k, v in c.effective_requests().items():
                reqs[k] = reqs.get(k, 0.0) + v
        if self.init_containers:
            sidecars: dict[str, float] = {}
            init_max: dict[str, float] = {}
            for c in self.init_containers:
                creq = c.effective_requests()
                if c.restart_policy == "Always":
                    for k, v in creq.items():
                        reqs[k] = reqs.get(k, 0.0) + v
                        sidecars[k] = sidecars.get(k, 0.0) + v
                    peak = sidecars
                else:
                    peak = dict(sidecars)
                    for k, v in creq.items():
                        peak[k] = peak.get(k, 0.0) + v
                for k, v in peak.items():
                    if v > init_max.get(k, 0.0):
                        init_max[k] = v
            for k, v in init_max.items():
                if v > reqs.get(k, 0.0):
                    reqs[k] = v
        if self.resources is not None and self.resources.requests:
            for k, v in self.resources.requests.items():
                reqs[k] = parse_quantity(v)
        if self.overhead:
            for k, v in self.overhead.items():
                reqs[k] = reqs.get(k, 0.0) + parse_quantity(v)
        return reqs

    def invalidate_requests(self) -> None:
        self.__dict__.pop("total_requests", None)


class PodCondition(Condition):
    """A pod condition (PodScheduled, Ready, ...): metav1.Condition plus lastProbeTime."""

    last_probe_time: datetime | None = None


class PodStatus(KubeModel):
    phase: PodPhase = "Pending"
    conditions: list[PodCondition] = Field(default_factory=list, exclude_if=_is_empty)
    message: str | None = None
    reason: str | None = None
    nominated_node_name: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    host_ips: list[Opaque] | None = Field(default=None, alias="hostIPs")
    pod_ip: str | None = Field(default=None, alias="podIP")
    pod_ips: list[Opaque] | None = Field(default=None, alias="podIPs")
    start_time: datetime | None = None
    qos_class: str | None = None
    init_container_statuses: list[Opaque] | None = None
    container_statuses: list[Opaque] | None = None
    ephemeral_container_statuses: list[Opaque] | None = None
    resize: str | None = None
    resource_claim_statuses: list[Opaque] | None = None
    observed_generation: int | None = None


class Pod(Resource):
    API_VERSION = "v1"
    KIND = "Pod"
    PLURAL = "pods"
    SHORT_NAMES = ("po",)
    NAMESPACED = True
    HAS_STATUS = True

    spec: PodSpec
    status: PodStatus = Field(default_factory=PodStatus)

    # --- hot-path helpers (no allocation beyond the first call) ---

    def resource_requests(self) -> dict[str, float]:
        """cpu (cores), memory (bytes), GPUs, ... the pod needs; cached, read-only."""
        return self.spec.total_requests

    @property
    def is_gated(self) -> bool:
        """Has scheduling gates: the scheduler must not consider it yet."""
        return bool(self.spec.scheduling_gates)

    @property
    def is_bound(self) -> bool:
        return bool(self.spec.node_name)

    @property
    def is_terminal(self) -> bool:
        return self.status.phase == "Succeeded" or self.status.phase == "Failed"

    @property
    def is_deleting(self) -> bool:
        return self.metadata.deletion_timestamp is not None

    @property
    def is_ready(self) -> bool:
        cond = get_condition(self.status.conditions, "Ready")  # type: ignore[arg-type]
        return cond is not None and cond.status == "True"

    @property
    def scheduler_name(self) -> str:
        """The scheduler the pod waits for: unset means default-scheduler, as the API
        server defaults it."""
        return self.spec.scheduler_name or DEFAULT_SCHEDULER

    def has_gate(self, name: str) -> bool:
        return any(g.name == name for g in self.spec.scheduling_gates)

    def add_gate(self, name: str) -> bool:
        """Add a scheduling gate; False if it was already there."""
        if self.has_gate(name):
            return False
        self.spec.scheduling_gates.append(PodSchedulingGate(name=name))
        return True

    def remove_gate(self, name: str) -> bool:
        """Remove one scheduling gate (never others'); False if it was not there."""
        gates = self.spec.scheduling_gates
        kept = [g for g in gates if g.name != name]
        if len(kept) == len(gates):
            return False
        self.spec.scheduling_gates = kept
        return True

    def get_condition(self, type_: str) -> PodCondition | None:
        return get_condition(self.status.conditions, type_)  # type: ignore[arg-type,return-value]

    def set_condition(
        self,
        type_: str,
        status: bool | str,
        reason: str,
        message: str = "",
        now: datetime | None = None,
    ) -> bool:
        """Set a pod condition (e.g. PodScheduled=False, reason Unschedulable); True if changed."""
        return set_condition(
            self.status.conditions,  # type: ignore[arg-type]
            type_,
            status,
            reason,
            message,
            now,
            cls=PodCondition,
        )
