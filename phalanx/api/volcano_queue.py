"""Volcano's `scheduling.volcano.sh/v1beta1` Queue, read (never written) by PodCliqueSet
admission: Volcano's PodGroup webhook refuses a PodGroup whose queue does not exist or is not
`Open`, so a PodCliqueSet naming such a queue is refused before its PodGroups are.

Only what admission reads is modelled (the server's other fields are pruned when decoded). Not
registered with the API registry: the embedded cluster does not serve Volcano's Queue (a
manifest with one is refused, naming KAI's Queue instead), and has only the `default` queue
every Volcano install creates.
"""

from __future__ import annotations

from pydantic import Field

from .base import KubeModel, Resource

VOLCANO_DEFAULT_QUEUE = "default"  # the queue Volcano creates at install
QUEUE_OPEN = "Open"


class VolcanoQueueStatus(KubeModel):
    state: str | None = None  # Open, Closed, Closing, Unknown


class VolcanoQueue(Resource):
    API_VERSION = "scheduling.volcano.sh/v1beta1"
    KIND = "Queue"
    PLURAL = "queues"
    NAMESPACED = False

    status: VolcanoQueueStatus = Field(default_factory=VolcanoQueueStatus)
