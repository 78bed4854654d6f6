"""Names and labels of everything a PodCliqueSet owns (Grove's scheme).

    PodClique (standalone)        <pcs>-<i>-<clique>
    PodCliqueScalingGroup         <pcs>-<i>-<group>
    PodClique (in a group)        <pcs>-<i>-<group>-<j>-<clique>
    base PodGang                  <pcs>-<i>
    scaled PodGang                <pcs>-<i>-<group>-<j - minAvailable>   (j >= minAvailable)
    Pod                           generateName <podclique>-, hostname <podclique>-<k>

Every object name but a pod's is deterministic, so a create that raced a restart answers
AlreadyExists instead of making a duplicate. Pods are created as Grove creates them: the API
server generates the name, and the pod's identity within its clique is its index k, carried
by `spec.hostname` (and the `grove.io/podclique-pod-index` label); the PodClique controller's
expectations (expectations.py) keep a lagging cache from creating an index twice.
A scaled PodGang is named, as Grove names it, by its offset above the group's minAvailable:
the first scaled gang of `<pcs>-<i>-<group>` is `<pcs>-<i>-<group>-0` whatever minAvailable
is, so tools written for Grove find it; its PodCliques keep the replica index j
(`<pcs>-<i>-<group>-<j>-<clique>`), and the `grove.io/podcliquescalinggroup-replica-index`
label says which replica a scaled PodGang holds.
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.core import Pod

# PodClique (and pod) annotation: "<podclique>:<minAvailable>,..." -- the pods must not
# start until each named PodClique has at least that many Ready pods. The pods' grove-initc
# init container carries the same list (startupwaiter.py); the simulated kubelet reads it
# from there and falls back to this annotation for pods without one. The operator's own key
# (not grove.io/: a clique template's annotations are opaque in Grove and are copied to the
# PodClique and its pods as written), and never taken from a template (RESERVED_ANNOTATIONS).
ANNOTATION_STARTS_AFTER = "phalanx.dev/starts-after"

# On a PodCliqueScalingGroup: the template `replicas` it was last given. The object owns its
# replicas after creation (an HPA or `kubectl scale` writes them there, as in Grove); only a
# change of the template value, told apart by this record, resets them.
ANNOTATION_TEMPLATE_REPLICAS = "phalanx.dev/template-replicas"

# Annotations the operator writes on the PodCliques (and pods) and PodCliqueScalingGroups it
# makes: refused in a template (admission_meta.py), dropped from one by the builders.
RESERVED_ANNOTATIONS = (ANNOTATION_STARTS_AFTER, ANNOTATION_TEMPLATE_REPLICAS)

# Longest `<pcs>` + `<clique or group>` name, so generated pod names stay DNS labels
# (their hostnames `<podclique>-<k>` and generated names `<podclique>-<5 chars>`): Grove's budget.
MAX_COMBINED_NAME_LENGTH = 45


def podclique_name(pcs: str, replica: int, clique: str) -> str:
    return f"{pcs}-{replica}-{clique}"


def scaling_group_name(pcs: str, replica: int, group: str) -> str:
    return f"{pcs}-{replica}-{group}"


def group_podclique_name(pcsg: str, group_replica: int, clique: str) -> str:
    return f"{pcsg}-{group_replica}-{clique}"


def base_podgang_name(pcs: str, replica: int) -> str:
    return f"{pcs}-{replica}"


def scaled_podgang_name(pcsg: str, group_replica: int, min_available: int) -> str:
    """The PodGang of scaling group replica `group_replica` (>= `min_available`)."""
    if group_replica < min_available:
        raise ValueError(f"replica {group_replica} of {pcsg} is in the base PodGang "
                         f"(minAvailable {min_available})")
    return f"{pcsg}-{group_replica - min_available}"


def pod_generate_name(podclique: str) -> str:
    return f"{podclique}-"


def pod_hostname(podclique: str, index: int) -> str:
    return f"{podclique}-{index}"


def hostname_index(hostname: str | None) -> int | None:
    """The k of hostname `<podclique>-<k>` (its last dash-separated part, as Grove's index
    tracker reads it), or None when it has none."""
    _, sep, tail = (hostname or "").rpartition("-")
    return int(tail) if sep and tail.isdigit() else None


def pod_index(pod: Pod) -> int | None:
    """A pod's index in its PodClique, from its hostname (Grove's internal/index/tracker.go)."""
    return hostname_index(pod.spec.hostname)


def group_config_name(pcsg_name: str, pcs: str, replica: int) -> str:
    """The scaling group's name in the PodCliqueSet template, from its object name."""
    prefix = f"{pcs}-{replica}-"
    return pcsg_name.removeprefix(prefix)


# --- labels -----------------------------------------------------------------------------------


def managed_labels(pcs: str) -> dict[str, str]:
    """On every object a PodCliqueSet owns: how to find them all."""
    return {L.LABEL_MANAGED_BY: L.MANAGED_BY_VALUE, L.LABEL_PART_OF: pcs}


def replica_labels(pcs: str, replica: int) -> dict[str, str]:
    return {**managed_labels(pcs), L.LABEL_PODCLIQUESET_REPLICA_INDEX: str(replica)}


def scaling_group_labels(pcsg: str, group_replica: int, base_podgang: str | None) -> dict[str, str]:
    """On the PodCliques (and their pods) of one scaling group replica. `base_podgang` is
    set for replicas in a scaled PodGang: they wait for that base PodGang."""
    out = {
        L.LABEL_PODCLIQUESCALINGGROUP: pcsg,
        L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX: str(group_replica),
    }
    if base_podgang is not None:
        out[L.LABEL_BASE_PODGANG] = base_podgang
    return out


def pcs_of(meta_labels: dict[str, str]) -> str | None:
    return meta_labels.get(L.LABEL_PART_OF)


def replica_of(meta_labels: dict[str, str]) -> int | None:
    raw = meta_labels.get(L.LABEL_PODCLIQUESET_REPLICA_INDEX)
    return int(raw) if raw is not None and raw.isdigit() else None


def format_starts_after(deps: list[tuple[str, int]]) -> str:
    return ",".join(f"{name}:{minimum}" for name, minimum in deps)


def parse_starts_after(value: str | None) -> list[tuple[str, int]]:
    """Inverse of `format_starts_after`; malformed entries are skipped."""
    out: list[tuple[str, int]] = []
    for part in (value or "").split(","):
        name, sep, raw = part.strip().rpartition(":")
        if sep and name and raw.isdigit():
            out.append((name, int(raw)))
    return out
