"""What an update has reached, read from status (pure functions; Grove's rules).

- A PodClique is *current* when its `grove.io/pod-template-hash` label, its
  `status.currentPodTemplateHash` and `status.currentPodCliqueSetGenerationHash` match the
  PodCliqueSet's spec, and it has minAvailable pods both updated and Ready.
- A scaling group is current when `status.currentPodCliqueSetGenerationHash` matches (set once
  every PodClique of it converged and its own rolling update ended).
- A PodCliqueSet replica is updated when all its standalone PodCliques and scaling groups are.
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet

from . import naming, templatehash

STRATEGY_ON_DELETE = "OnDelete"


def is_auto_update(pcs: PodCliqueSet) -> bool:
    """RollingRecreate (the default): the operator replaces outdated pods itself."""
    st = pcs.spec.update_strategy
    return st is None or st.type != STRATEGY_ON_DELETE


def in_progress(obj: PodCliqueSet | PodClique | PodCliqueScalingGroup) -> bool:
    up = obj.status.update_progress
    return up is not None and up.update_ended_at is None


def pcs_rolling(pcs: PodCliqueSet) -> bool:
    """A RollingRecreate update of the PodCliqueSet is under way (gang termination holds off)."""
    return is_auto_update(pcs) and in_progress(pcs)


def clique_template_name(pclq: PodClique, pcs_name: str) -> str:
    """The template clique name of a PodClique (its name after the replica's prefix)."""
    m = pclq.metadata.labels
    pcsg = m.get(L.LABEL_PODCLIQUESCALINGGROUP)
    j = m.get(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX)
    prefix = f"{pcsg}-{j}-" if pcsg and j is not None else \
        f"{pcs_name}-{naming.replica_of(m)}-"
    return pclq.name[len(prefix):] if pclq.name.startswith(prefix) else pclq.name


def expected_hash(pcs: PodCliqueSet, pclq: PodClique) -> str | None:
    return templatehash.clique_hash(pcs, clique_template_name(pclq, pcs.name))


def pclq_min_available(pclq: PodClique) -> int:
    s = pclq.spec
    return s.min_available if s.min_available is not None else s.replicas


def pclq_current(pcs: PodCliqueSet, pclq: PodClique, template: str | None = None) -> bool:
    """Grove's isPCLQUpdateComplete. `template`: the clique's template name, when the caller
    found the PodClique by the name that template gives it (no need to work it out again
    from the PodClique's name and labels, once per clique of every replica)."""
    gen = pcs.status.current_generation_hash
    want = expected_hash(pcs, pclq) if template is None else \
        templatehash.clique_hash(pcs, template)
    st = pclq.status
    need = pclq_min_available(pclq)
    return (gen is not None and want is not None
            and pclq.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) == want
            and st.current_pod_template_hash == want
            and st.current_pod_clique_set_generation_hash == gen
            and st.updated_replicas >= need and st.ready_replicas >= need)


def pcsg_current(pcs: PodCliqueSet, pcsg: PodCliqueScalingGroup) -> bool:
    gen = pcs.status.current_generation_hash
    return gen is not None and pcsg.status.current_pod_clique_set_generation_hash == gen


def pod_hash_target(pclq: PodClique) -> str | None:
    """The hash a PodClique's pods should carry: the update's target while one is recorded,
    else the PodClique's label (Grove's mutateUpdatedReplica)."""
    up = pclq.status.update_progress
    if up is not None:
        return up.pod_template_hash
    return pclq.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) or \
        pclq.status.current_pod_template_hash
