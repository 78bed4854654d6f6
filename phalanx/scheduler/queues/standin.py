"""What phalanx-scheduler, standing in for kai-scheduler (the embedded cluster's kai-scheduler
profile, or `phalanx scheduler --scheduler-name kai-scheduler`), does not model.

The kai backend passes these through to KAI, which honours them, so admission accepts them;
the stand-in cannot. As UnsupportedPodFields refuses a field whose plugin a profile lacks,
QueueCapacity's PreFilter refuses such a kai-scheduler pod as unresolvable, naming the key:
it waits with the reason instead of running as if it had not asked.

- KAI GPU sharing: a `gpu-fraction` in (0, 1] or a positive `gpu-memory` (the values KAI's
  PodInfo reads; others it ignores, and so does this) asks for a share of one GPU, which KAI
  places on a GPU and counts against the queue. No GPU share is modelled here.
- KAI scheduling shards: a PodGroup labelled `kai.scheduler/node-pool` (from the workload's
  labels) is scheduled only by that node pool's shard; KAI's default shard lists only
  PodGroups without the label. The stand-in is one default shard.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from phalanx.api import labels

if TYPE_CHECKING:
    from phalanx.api.core import Pod

    from .kai_groups import GroupInfo

STANDIN = "phalanx-scheduler standing in for kai-scheduler"


def _gpu_share(annotations: dict[str, str]) -> tuple[str, str] | None:
    """(key, value) of the GPU share KAI would read, else None."""
    raw = annotations.get(labels.ANNOTATION_KAI_GPU_FRACTION)
    if raw is not None:
        try:  # strconv.ParseFloat: no surrounding blanks
            fraction = float(raw) if raw == raw.strip() else math.nan
        except ValueError:
            fraction = math.nan
        if 0 < fraction <= 1:
            return labels.ANNOTATION_KAI_GPU_FRACTION, raw
    raw = annotations.get(labels.ANNOTATION_KAI_GPU_MEMORY)
    if raw is not None and re.fullmatch(r"[+-]?[0-9]+", raw) and int(raw) > 0:  # ParseInt
        return labels.ANNOTATION_KAI_GPU_MEMORY, raw
    return None


def kai_unmodelled(pod: Pod, group: GroupInfo | None) -> str:
    """Why the stand-in cannot schedule this kai-scheduler pod as KAI would ("" when it can)."""
    if pod.spec.scheduler_name != labels.SCHEDULER_KAI:
        return ""
    share = _gpu_share(pod.metadata.annotations)
    if share is not None:
        key, value = share
        return (f"metadata.annotations[{key}] ({value!r}): KAI GPU sharing is not modelled by "
                f"{STANDIN} (it would count no GPU for the pod, neither on a node nor against "
                "its queue); request whole GPUs (nvidia.com/gpu), or run it under KAI")
    pool = (group.node_pool if group is not None else None) or \
        pod.metadata.labels.get(labels.LABEL_KAI_NODE_POOL)
    if pool:
        return (f"{labels.LABEL_KAI_NODE_POOL} {pool!r} (label of its PodGroup): KAI schedules it "
                f"only in the scheduling shard of node pool {pool!r}; {STANDIN} is KAI's "
                "default shard, which takes only PodGroups without that label")
    return ""
