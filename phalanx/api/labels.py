"""Well-known label, annotation, finalizer and scheduling-gate keys.

One place for the strings that cross layers (operator, backends, scheduler) so a typo is
an import error rather than a silent mismatch. Grouped by who defines the key.
"""

from __future__ import annotations

# --- Kubernetes recommended labels (on everything a PodCliqueSet owns) ---------------------

LABEL_APP_NAME = "app.kubernetes.io/name"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_PART_OF = "app.kubernetes.io/part-of"  # value: the PodCliqueSet name
LABEL_COMPONENT = "app.kubernetes.io/component"
MANAGED_BY_VALUE = "grove-operator"

# Values of LABEL_COMPONENT (Grove's).
COMPONENT_PODGANG = "podgang"
COMPONENT_PCS_PODCLIQUE = "pcs-podclique"  # a PodClique owned by the PodCliqueSet
COMPONENT_PCSG_PODCLIQUE = "pcsg-podclique"  # a PodClique owned by a scaling group
COMPONENT_PCSG = "pcs-podcliquescalinggroup"
COMPONENT_HEADLESS_SERVICE = "pcs-headless-service"

# --- Grove (grove.io) --------------------------------------------------------------------
# Keys are Grove's real ones (operator/api/common), so tools written for Grove work.

# Every Grove pod carries both, whatever the backend.
LABEL_PODGANG = "grove.io/podgang"
LABEL_PODCLIQUE = "grove.io/podclique"
# On scaled PodGangs (scaling-group replicas at or above minAvailable): the base PodGang.
LABEL_BASE_PODGANG = "grove.io/base-podgang"
LABEL_PODCLIQUESET_REPLICA_INDEX = "grove.io/podcliqueset-replica-index"
LABEL_PODCLIQUESET_GENERATION_HASH = "grove.io/podcliqueset-generation-hash"
LABEL_PODCLIQUE_POD_INDEX = "grove.io/podclique-pod-index"
LABEL_PODCLIQUESCALINGGROUP = "grove.io/podcliquescalinggroup"
LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX = "grove.io/podcliquescalinggroup-replica-index"
LABEL_POD_TEMPLATE_HASH = "grove.io/pod-template-hash"
# On a PodGang: the ClusterTopology a topology-aware scheduler should use.
ANNOTATION_TOPOLOGY_NAME = "grove.io/topology-name"
ANNOTATION_DISABLE_MANAGED_RESOURCE_PROTECTION = "grove.io/disable-managed-resource-protection"
# Finalizers Grove's controllers put on their own objects.
FINALIZER_PODCLIQUESET = "grove.io/podcliqueset.grove.io"
FINALIZER_PODCLIQUE = "grove.io/podclique.grove.io"
FINALIZER_PODCLIQUESCALINGGROUP = "grove.io/podcliquescalinggroup.grove.io"
# Environment variables Grove injects into every container.
ENV_PCS_NAME = "GROVE_PCS_NAME"
ENV_PCS_INDEX = "GROVE_PCS_INDEX"
ENV_PCLQ_NAME = "GROVE_PCLQ_NAME"
ENV_PCLQ_POD_INDEX = "GROVE_PCLQ_POD_INDEX"
ENV_HEADLESS_SERVICE = "GROVE_HEADLESS_SERVICE"
ENV_PCSG_NAME = "GROVE_PCSG_NAME"
ENV_PCSG_INDEX = "GROVE_PCSG_INDEX"
ENV_PCSG_TEMPLATE_NUM_PODS = "GROVE_PCSG_TEMPLATE_NUM_PODS"
# On a PodGang: the backend profile / schedulerName that owns it (resolved by the backend controller).
LABEL_SCHEDULER_NAME = "grove.io/scheduler-name"
# Scheduling gate Phalanx puts on every pod it creates; lifted once the PodGang is Initialized.
GATE_PODGANG_PENDING_CREATION = "grove.io/podgang-pending-creation"
# Finalizer the PodGang backend controller adds so `on_podgang_delete` always runs.
FINALIZER_SCHEDULER_BACKEND = "grove.io/scheduler-backend"

# --- scheduler names (pod spec.schedulerName) --------------------------------------------

SCHEDULER_DEFAULT = "default-scheduler"
SCHEDULER_KAI = "kai-scheduler"
SCHEDULER_VOLCANO = "volcano"
SCHEDULER_KOORDINATOR = "koord-scheduler"
SCHEDULER_PHALANX = "phalanx-scheduler"

# --- kube-scheduler Workload API (KEP-4671) ----------------------------------------------

# Finalizer the API server puts on a standalone PodGroup (scheduling.k8s.io/v1alpha2+).
FINALIZER_PODGROUP_PROTECTION = "scheduling.k8s.io/podgroup-protection"

# --- KAI scheduler (scheduling.run.ai) ----------------------------------------------------

# On the PodCliqueSet or a clique template (label): the KAI queue its PodGroups are submitted
# to. KAI's grove grouper takes the PodGang's (Grove mirrors the PodCliqueSet's labels onto
# it) before the pod's.
LABEL_KAI_QUEUE = "kai.scheduler/queue"
# The queue fallback of KAI's default grouper when no queue label is set:
# `<project>[-<node-pool>]` (the node pool from the pod's label).
LABEL_KAI_PROJECT = "project"
# `preemptible` / `non-preemptible`: the PodGroup's spec.preemptibility (else the priority
# decides: below 100 preemptible).
LABEL_KAI_PREEMPTIBILITY = "kai.scheduler/preemptibility"
KAI_PREEMPTIBILITY_VALUES = ("preemptible", "non-preemptible")
# KAI's grouper: a label naming the PodGroup's priorityClassName (over the PodGang's).
LABEL_KAI_PRIORITY_CLASS = "priorityClassName"
# KAI's scheduling shards: a PodGroup with this label is scheduled only by the shard of that
# node pool (the default shard lists PodGroups without it).
LABEL_KAI_NODE_POOL = "kai.scheduler/node-pool"
# On the PodCliqueSet (annotations): the PodGroup's topologyConstraint when the PodGang has no
# pack constraint (a KAI Topology name, and node-label keys as levels).
ANNOTATION_KAI_TOPOLOGY = "kai.scheduler/topology"
ANNOTATION_KAI_TOPOLOGY_REQUIRED = "kai.scheduler/topology-required-placement"
ANNOTATION_KAI_TOPOLOGY_PREFERRED = "kai.scheduler/topology-preferred-placement"
# On a pod (annotations): KAI GPU sharing, a fraction of one GPU or GPU memory in MiB (with
# the number of devices and the container they apply to).
ANNOTATION_KAI_GPU_FRACTION = "gpu-fraction"
ANNOTATION_KAI_GPU_MEMORY = "gpu-memory"
KAI_GPU_SHARING_ANNOTATIONS = (ANNOTATION_KAI_GPU_FRACTION, ANNOTATION_KAI_GPU_MEMORY,
                               "gpu-fraction-num-devices", "gpu-fraction-container-name")
# On a pod (annotation): the KAI PodGroup it belongs to.
ANNOTATION_KAI_POD_GROUP = "pod-group-name"
# On a pod (label): the PodGroup subGroup it belongs to.
LABEL_KAI_SUBGROUP = "kai.scheduler/subgroup-name"

# --- Volcano (scheduling.volcano.sh) ------------------------------------------------------

# On a pod (annotation): the Volcano PodGroup it belongs to.
ANNOTATION_VOLCANO_GROUP_NAME = "scheduling.k8s.io/group-name"
# On a pod (annotation): the task (PodGroup minTaskMember key) it belongs to.
ANNOTATION_VOLCANO_TASK_SPEC = "volcano.sh/task-spec"
# On a pod (annotation): the Volcano queue, as Volcano's PodGroup controller reads it
# (scheduling.volcano.sh/queue-name); on a clique template, or the PodCliqueSet.
ANNOTATION_VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
# On a PodCliqueSet or clique template (label only): the Volcano queue, Phalanx's earlier key
# (Volcano's own use of it is the Volcano Job label); read after the annotation.
LABEL_VOLCANO_QUEUE = "volcano.sh/queue-name"
# On a pod (annotation, else label): "false" keeps Volcano from evicting it (any value
# strconv.ParseBool does not read counts as false, as in Volcano).
VOLCANO_PREEMPTABLE = "volcano.sh/preemptable"

# --- Koordinator / scheduler-plugins coscheduling -----------------------------------------

# On a pod (label): the scheduler-plugins PodGroup it belongs to.
LABEL_POD_GROUP = "pod-group.scheduling.sigs.k8s.io"
# The same, under the newer scheduler-plugins group (scheduling.x-k8s.io).
LABEL_POD_GROUP_X_K8S = "scheduling.x-k8s.io/pod-group"
# Koordinator gang annotations on pods.
ANNOTATION_KOORD_GANG_NAME = "gang.scheduling.koordinator.sh/name"
ANNOTATION_KOORD_GANG_MIN_AVAILABLE = "gang.scheduling.koordinator.sh/min-available"
ANNOTATION_KOORD_GANG_TOTAL_NUMBER = "gang.scheduling.koordinator.sh/total-number"
ANNOTATION_KOORD_GANG_MODE = "gang.scheduling.koordinator.sh/mode"
ANNOTATION_KOORD_GANG_GROUPS = "gang.scheduling.koordinator.sh/groups"
ANNOTATION_KOORD_GANG_WAITING_TIME = "gang.scheduling.koordinator.sh/waiting-time"
# Koordinator network-topology-aware gang placement: {"gatherStrategy": [{layer, strategy}]}.
ANNOTATION_KOORD_NETWORK_TOPOLOGY_SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
