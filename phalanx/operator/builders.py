"""Desired objects: PodGang, PodClique, PodCliqueScalingGroup and Pod, built from the plan.

Everything a controller compares or writes later is set here, at creation, so steady state
costs no extra writes (labels, owner references, the backend finalizer, the scheduling gate).
Labels and annotations are whole, as Grove sets them on every sync: a PodGang mirrors the
PodCliqueSet's own (`podgang_metadata`), a PodClique has its template's (`podclique_labels`,
`podclique_annotations`), a PodCliqueScalingGroup its config's; a key removed there goes
from the object too. Pods copy their PodClique's labels and annotations when created.
"""

from __future__ import annotations

import copy

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta, OwnerReference
from phalanx.api.core import Pod, PodSpec
from phalanx.api.grove import (
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueScalingGroupConfig,
    PodCliqueScalingGroupSpec,
    PodCliqueSet,
    PodGang,
    PodGangGroup,
    PodGangSpec,
    TopologyConstraintGroupConfig,
)

from . import computedomain, headless_service, naming, resourceclaim, startupwaiter, templatehash

GROVE_PREFIX = "grove.io/"  # Grove's GroveDomainPrefix: keys the operator owns
from .plan import CliquePlan, DomainKey, GangPlan, min_available, pack_constraint, template_replicas


def _owner(obj: PodCliqueSet | PodCliqueScalingGroup | PodClique) -> list[OwnerReference]:
    return [obj.owner_reference(controller=True, block=True)]


def podgang_groups(plan: GangPlan, key_of: DomainKey | None) -> list[PodGangGroup]:
    return [
        PodGangGroup(name=c.name, min_replicas=c.min_available,
                     topology_constraint=pack_constraint(c.template.topology_constraint, key_of))
        for c in plan.cliques
    ]


def _mirror(existing: dict[str, str], pcs_entries: dict[str, str],
            own: dict[str, str]) -> dict[str, str]:
    """Grove's mirrorPCSMetadata: the PodGang's grove.io/ entries kept, the PodCliqueSet's
    other entries copied (its grove.io/ ones are not), the operator's own on top."""
    out = {k: v for k, v in existing.items() if k.startswith(GROVE_PREFIX)}
    out.update((k, v) for k, v in pcs_entries.items() if not k.startswith(GROVE_PREFIX))
    out.update(own)
    return out


def podgang_metadata(pcs: PodCliqueSet, plan: GangPlan, scheduler: str,
                     topology_name: str | None, existing: PodGang | None = None
                     ) -> tuple[dict[str, str], dict[str, str]]:
    """A PodGang's labels and annotations (Grove's podgang buildResource): the PodCliqueSet's
    mirrored, then the operator's; `grove.io/topology-name` only while a topology applies."""
    own = {
        **naming.replica_labels(pcs.name, plan.replica),
        L.LABEL_COMPONENT: L.COMPONENT_PODGANG,
        L.LABEL_SCHEDULER_NAME: scheduler,
    }
    if plan.group is not None:
        own.update(naming.scaling_group_labels(plan.group, plan.group_replica or 0,
                                               plan.base_podgang))
    m = existing.metadata if existing is not None else None
    labels = _mirror(m.labels if m else {}, pcs.metadata.labels, own)
    annotations = _mirror(m.annotations if m else {}, pcs.metadata.annotations, {})
    annotations.pop(L.ANNOTATION_TOPOLOGY_NAME, None)
    if topology_name:
        annotations[L.ANNOTATION_TOPOLOGY_NAME] = topology_name
    return labels, annotations


def build_podgang(pcs: PodCliqueSet, plan: GangPlan, scheduler: str,
                  key_of: DomainKey | None = None, topology_name: str | None = None) -> PodGang:
    """A new PodGang: groups with empty pod references (filled once every pod exists)."""
    meta_labels, annotations = podgang_metadata(pcs, plan, scheduler, topology_name)
    return PodGang(
        metadata=ObjectMeta(
            name=plan.name, namespace=pcs.namespace, labels=meta_labels,
            annotations=annotations, owner_references=_owner(pcs),
            # The backend controller's finalizer, set now to save a write per PodGang.
            finalizers=[L.FINALIZER_SCHEDULER_BACKEND],
        ),
        spec=podgang_spec(pcs, plan, key_of),
    )


def podgang_spec(pcs: PodCliqueSet, plan: GangPlan, key_of: DomainKey | None) -> PodGangSpec:
    configs = [
        TopologyConstraintGroupConfig(name=name, pod_group_names=names, topology_constraint=tc)
        for name, names, tc in plan.group_topologies
    ]
    return PodGangSpec(
        pod_groups=podgang_groups(plan, key_of),
        topology_constraint=plan.topology,
        topology_constraint_group_configs=configs or None,
        priority_class_name=pcs.spec.template.priority_class_name,
    )


def podclique_labels(pcs: PodCliqueSet, plan: CliquePlan) -> dict[str, str]:
    out = dict(plan.template.labels or {})
    out.update(naming.replica_labels(pcs.name, plan.replica))
    out[L.LABEL_APP_NAME] = plan.name
    out[L.LABEL_PODGANG] = plan.podgang
    # Pods copy it from the PodClique: which template a pod was made from (rolling updates).
    out[L.LABEL_POD_TEMPLATE_HASH] = templatehash.clique_hash(pcs, plan.template.name) or ""
    if plan.group is None:
        out[L.LABEL_COMPONENT] = L.COMPONENT_PCS_PODCLIQUE
    else:
        out[L.LABEL_COMPONENT] = L.COMPONENT_PCSG_PODCLIQUE
        out.update(naming.scaling_group_labels(plan.group, plan.group_replica or 0,
                                               plan.base_podgang))
    return out


def podclique_annotations(plan: CliquePlan) -> dict[str, str]:
    """The template's annotations (Grove: `maps.Clone`, without `grove.io/topology-name`:
    the PodGang owns topology) and the operator's own: the template replicas last applied
    and, with startup dependencies, the waiter's list. A template never sets the operator's
    keys (admission refuses them; dropped here should one get through)."""
    out = {k: v for k, v in (plan.template.annotations or {}).items()
           if k not in naming.RESERVED_ANNOTATIONS and k != L.ANNOTATION_TOPOLOGY_NAME}
    # The template value applied last: `kubectl scale` or an HPA then owns the PodClique's
    # replicas until the template's own value changes (Grove keeps a direct scale).
    out[naming.ANNOTATION_TEMPLATE_REPLICAS] = str(plan.template.spec.replicas)
    if plan.starts_after:
        out[naming.ANNOTATION_STARTS_AFTER] = naming.format_starts_after(
            list(plan.starts_after))
    return out


def build_podclique(pcs: PodCliqueSet, plan: CliquePlan,
                    owner: PodCliqueSet | PodCliqueScalingGroup,
                    replicas: int | None = None) -> PodClique:
    spec = plan.template.spec.model_copy(deep=True)
    if spec.min_available is None:
        spec.min_available = spec.replicas
    if replicas is not None:
        spec.replicas = replicas
    spec.starts_after = [name for name, _ in plan.starts_after] or None
    # The PodCliqueSet's priority applies to every pod unless a clique names its own, so
    # queue order and preemption see the same priority the PodGang carries.
    if spec.pod_spec.priority_class_name is None and pcs.spec.template.priority_class_name:
        spec.pod_spec.priority_class_name = pcs.spec.template.priority_class_name
    return PodClique(
        metadata=ObjectMeta(name=plan.name, namespace=pcs.namespace,
                            labels=podclique_labels(pcs, plan),
                            annotations=podclique_annotations(plan),
                            owner_references=_owner(owner)),
        spec=spec,
    )


def scaling_group_annotations(pcs: PodCliqueSet, cfg: PodCliqueScalingGroupConfig
                              ) -> dict[str, str]:
    """Grove's: the config's annotations, and the PodCliqueSet's `grove.io/mnnvl-group`
    unless the config has its own; then the template replicas last applied (ours)."""
    out = {k: v for k, v in (cfg.annotations or {}).items()
           if k not in naming.RESERVED_ANNOTATIONS}
    mnnvl = pcs.metadata.annotations.get(computedomain.ANNOTATION_MNNVL_GROUP)
    if mnnvl is not None:
        out.setdefault(computedomain.ANNOTATION_MNNVL_GROUP, mnnvl)
    out[naming.ANNOTATION_TEMPLATE_REPLICAS] = str(template_replicas(cfg))
    return out


def build_scaling_group(pcs: PodCliqueSet, replica: int,
                        cfg: PodCliqueScalingGroupConfig) -> PodCliqueScalingGroup:
    name = naming.scaling_group_name(pcs.name, replica, cfg.name)
    meta_labels = {
        **naming.replica_labels(pcs.name, replica),
        L.LABEL_APP_NAME: name,
        L.LABEL_COMPONENT: L.COMPONENT_PCSG,
    }
    return PodCliqueScalingGroup(
        metadata=ObjectMeta(name=name, namespace=pcs.namespace, labels=meta_labels,
                            annotations=scaling_group_annotations(pcs, cfg),
                            owner_references=_owner(pcs)),
        spec=PodCliqueScalingGroupSpec(replicas=template_replicas(cfg),
                                       min_available=min_available(cfg),
                                       clique_names=list(cfg.clique_names)),
    )


def grove_env(pclq: PodClique, pcs: str, replica: int,
              group_pods: int | None) -> list[dict]:
    """Grove's variables in Grove's order: the pod's (components/pod addEnvironmentVariables),
    then the scaling group's (prepended to the PodClique's template by Grove's PCSG
    controller, so they follow the pod's). fieldRefs where Grove uses them, so every pod of
    a clique shares one template."""
    def label_ref(label: str) -> dict:
        return {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}

    env: list[dict] = [
        {"name": L.ENV_PCS_NAME, "value": pcs},
        {"name": L.ENV_PCS_INDEX, "value": str(replica)},
        {"name": L.ENV_PCLQ_NAME, "value": pclq.name},
        {"name": L.ENV_HEADLESS_SERVICE,
         "value": headless_service.service_address(pcs, replica, pclq.namespace)},
        {"name": L.ENV_PCLQ_POD_INDEX, "valueFrom": label_ref(L.LABEL_PODCLIQUE_POD_INDEX)},
    ]
    if L.LABEL_PODCLIQUESCALINGGROUP in pclq.metadata.labels:
        env.append({"name": L.ENV_PCSG_NAME,
                    "valueFrom": label_ref(L.LABEL_PODCLIQUESCALINGGROUP)})
        if group_pods is not None:
            env.append({"name": L.ENV_PCSG_TEMPLATE_NUM_PODS, "value": str(group_pods)})
        env.append({"name": L.ENV_PCSG_INDEX,
                    "valueFrom": label_ref(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX)})
    return env


def prepend_env(spec: dict, env: list[dict]) -> None:
    """Grove's PrependEnvVarsToContainers: `env` first, replacing user variables of the same
    name, so user values can refer to them as `$(GROVE_...)` (Grove #753)."""
    names = {e["name"] for e in env}
    for key in ("containers", "initContainers"):
        for container in spec.get(key, ()):
            container["env"] = [*(dict(e) for e in env),
                                *(e for e in container.get("env", ()) if e["name"] not in names)]


class PodFactory:
    """Pods of one PodClique: the pod template is prepared once (labels, env, the gate) and
    each pod is validated from it, which is much cheaper than deep-copying a PodSpec per pod.

    `group_pods`: pods per scaling group replica (GROVE_PCSG_TEMPLATE_NUM_PODS), when the
    clique is in a scaling group. The backend's `prepare_pod` runs on each pod afterwards.
    """

    def __init__(self, pclq: PodClique, *, group_pods: int | None = None,
                 pcs: PodCliqueSet | None = None) -> None:
        m = pclq.metadata
        self.owner_pcs = pcs  # for shared ResourceClaim references (resourceclaim.py)
        tpl = pcs.clique(resourceclaim.clique_template_name(pclq, pcs.name)) if pcs else None
        # auto-MNNVL's IMEX channel claim (computedomain.py)
        self.mnnvl_group = computedomain.clique_group(pcs, tpl) if pcs and tpl else None
        self.pclq = pclq
        self.pcs = naming.pcs_of(m.labels) or ""
        self.replica = naming.replica_of(m.labels) or 0
        # Grove's pod labels: the PodClique's (app.kubernetes.io/name included), then the
        # pod's own (pod.go getLabels).
        labels = dict(m.labels)
        labels[L.LABEL_PODCLIQUE] = pclq.name
        self.labels = labels
        self.annotations = dict(m.annotations)
        self.owner = _owner(pclq)
        spec = pclq.spec.pod_spec.model_dump(by_alias=True, exclude_none=True, round_trip=True)
        gates = [g for g in spec.get("schedulingGates", ())
                 if g["name"] != L.GATE_PODGANG_PENDING_CREATION]
        spec["schedulingGates"] = [*gates, {"name": L.GATE_PODGANG_PENDING_CREATION}]
        spec["subdomain"] = headless_service.service_name(self.pcs, self.replica)
        prepend_env(spec, grove_env(pclq, self.pcs, self.replica, group_pods))
        # After the env, as Grove: the waiter gets none of the GROVE_ variables.
        startupwaiter.inject(spec, self.pcs, naming.parse_starts_after(
            m.annotations.get(naming.ANNOTATION_STARTS_AFTER)))
        self.spec = spec

    def __call__(self, index: int) -> Pod:
        labels = dict(self.labels)
        labels[L.LABEL_PODCLIQUE_POD_INDEX] = str(index)
        raw = {**self.spec, "hostname": naming.pod_hostname(self.pclq.name, index)}
        if self.owner_pcs is not None:
            claims = resourceclaim.pod_claim_names(self.owner_pcs, self.pclq, index)
            if claims:
                raw = copy.deepcopy(raw)
                resourceclaim.inject_claims(raw, claims)
        spec = PodSpec.model_validate(raw)
        if self.mnnvl_group is not None and self.owner_pcs is not None:
            computedomain.inject_mnnvl(spec, self.owner_pcs, self.replica, self.mnnvl_group)
        return Pod(
            metadata=ObjectMeta(generate_name=naming.pod_generate_name(self.pclq.name),
                                namespace=self.pclq.namespace, labels=labels,
                                annotations=dict(self.annotations),
                                owner_references=list(self.owner)),
            spec=spec,
        )


def build_pod(pclq: PodClique, index: int, *, group_pods: int | None = None) -> Pod:
    """Pod `index` of a PodClique, gated until its PodGang is initialized."""
    return PodFactory(pclq, group_pods=group_pods)(index)
