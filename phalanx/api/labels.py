"""Well-known label, annotation, finalizer and scheduling-gate keys.

One place for the strings that cross layers (operator, backends, scheduler) so a typo is
an import error rather than a silent mismatch. Grouped by who defines the key.
"""

from __future__ import annotations

# --- Grove (grove.io) --------------------------------------------------------------------

# Every Grove pod carries both, whatever the backend.
LABEL_PODGANG = "grove.io/podgang"
LABEL_PODCLIQUE = "grove.io/podclique"
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

# On the PodCliqueSet (label): the KAI queue its PodGroups are submitted to.
LABEL_KAI_QUEUE = "kai.scheduler/queue"
# On a pod (annotation): the KAI PodGroup it belongs to.
ANNOTATION_KAI_POD_GROUP = "pod-group-name"
# On a pod (label): the PodGroup subGroup it belongs to.
LABEL_KAI_SUBGROUP = "kai.scheduler/subgroup-name"

# --- Volcano (scheduling.volcano.sh) ------------------------------------------------------

# On a pod (annotation): the Volcano PodGroup it belongs to.
ANNOTATION_VOLCANO_GROUP_NAME = "scheduling.k8s.io/group-name"
# On a pod (annotation): the task (PodGroup minTaskMember key) it belongs to.
ANNOTATION_VOLCANO_TASK_SPEC = "volcano.sh/task-spec"
# On a PodCliqueSet (annotation/label): the Volcano queue.
LABEL_VOLCANO_QUEUE = "volcano.sh/queue-name"

# --- Koordinator / scheduler-plugins coscheduling -----------------------------------------

# On a pod (label): the scheduler-plugins PodGroup it belongs to.
LABEL_POD_GROUP = "pod-group.scheduling.sigs.k8s.io"
# Koordinator gang annotations on pods.
ANNOTATION_KOORD_GANG_NAME = "gang.scheduling.koordinator.sh/name"
ANNOTATION_KOORD_GANG_MIN_AVAILABLE = "gang.scheduling.koordinator.sh/min-available"
ANNOTATION_KOORD_GANG_TOTAL_NUMBER = "gang.scheduling.koordinator.sh/total-number"
ANNOTATION_KOORD_GANG_MODE = "gang.scheduling.koordinator.sh/mode"
ANNOTATION_KOORD_GANG_GROUPS = "gang.scheduling.koordinator.sh/groups"
ANNOTATION_KOORD_GANG_WAITING_TIME = "gang.scheduling.koordinator.sh/waiting-time"
# Koordinator network-topology-aware gang placement: {"gatherStrategy": [{layer, strategy}]}.
ANNOTATION_KOORD_NETWORK_TOPOLOGY_SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
