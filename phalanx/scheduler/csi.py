"""The scheduler's view of CSI: CSINodes, CSIDrivers and VolumeAttachments.

`CSICache` holds them as the informers deliver them (kube-scheduler's CSINode, CSIDriver and
VolumeAttachment listers, the attachments indexed by node), counts changes in `epoch` (so
NodeVolumeLimits knows when its per-node counts are stale) and tells the scheduling queue,
so pods rejected for a node's volume limit are retried when a limit rises or a volume is
detached. One cache serves every profile (`CSICache.for_handle`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from phalanx.api.storage_csi import CSIDriver, CSINode, VolumeAttachment

from .informed import attach_handlers, queue_event

log = logging.getLogger(__name__)

SHARED_KEY = "csi/cache"
# Cluster-event resource names (the Kinds), as plugins register for them.
CSI_NODE_EVENT = "CSINode"
CSI_DRIVER_EVENT = "CSIDriver"
VOLUME_ATTACHMENT_EVENT = "VolumeAttachment"


class CSICache:
    """CSINodes and CSIDrivers by name; VolumeAttachments by name and by node."""

    def __init__(self) -> None:
        self.nodes: dict[str, CSINode] = {}
        self.drivers: dict[str, CSIDriver] = {}
        self.attachments: dict[str, VolumeAttachment] = {}
        self._on_node: dict[str, dict[str, VolumeAttachment]] = {}
        self.epoch = 0  # bumps on every change
        # Called with (kind, old, new) after every change (the scheduler's queue).
        self.listeners: list[Callable[[str, Any, Any], None]] = []

    # --- wiring -------------------------------------------------------------------------

    @classmethod
    def for_handle(cls, handle: Any) -> CSICache:
        """The scheduler's shared cache, fed by its informers (a bare one without them)."""
        sched = getattr(handle, "scheduler", None)
        shared = getattr(handle, "shared", None)
        if sched is None or shared is None:
            return shared(SHARED_KEY, cls) if shared is not None else cls()

        def build() -> CSICache:
            cache = cls()
            cache.attach(sched.informers)
            cache.listeners.append(lambda kind, old, new: queue_event(sched, kind, old, new))
            return cache

        cache: CSICache = shared(SHARED_KEY, build)
        return cache

    def attach(self, informers: Any) -> None:
        attach_handlers(informers, (
            (CSINode, self.set_node, self.delete_node),
            (CSIDriver, self.set_driver, self.delete_driver),
            (VolumeAttachment, self.set_attachment, self.delete_attachment),
        ), "CSI cache")

    # --- informer side ------------------------------------------------------------------

    def set_node(self, node: CSINode, old: CSINode | None = None) -> None:
        prev = self.nodes.get(node.name)
        self.nodes[node.name] = node
        self._changed(CSI_NODE_EVENT, old if old is not None else prev, node)

    def delete_node(self, node: CSINode) -> None:
        self.nodes.pop(node.name, None)
        self._changed(CSI_NODE_EVENT, node, None)

    def set_driver(self, driver: CSIDriver, old: CSIDriver | None = None) -> None:
        prev = self.drivers.get(driver.name)
        self.drivers[driver.name] = driver
        self._changed(CSI_DRIVER_EVENT, old if old is not None else prev, driver)

    def delete_driver(self, driver: CSIDriver) -> None:
        self.drivers.pop(driver.name, None)
        self._changed(CSI_DRIVER_EVENT, driver, None)

    def set_attachment(self, va: VolumeAttachment, old: VolumeAttachment | None = None) -> None:
        prev = self.attachments.get(va.name)
        if prev is not None:
            self._on_node.get(prev.spec.node_name, {}).pop(va.name, None)
        self.attachments[va.name] = va
        self._on_node.setdefault(va.spec.node_name, {})[va.name] = va
        self._changed(VOLUME_ATTACHMENT_EVENT, old if old is not None else prev, va)

    def delete_attachment(self, va: VolumeAttachment) -> None:
        prev = self.attachments.pop(va.name, None)
        if prev is not None:
            on_node = self._on_node.get(prev.spec.node_name, {})
            on_node.pop(va.name, None)
            if not on_node:
                self._on_node.pop(prev.spec.node_name, None)
        self._changed(VOLUME_ATTACHMENT_EVENT, va, None)

    def _changed(self, kind: str, old: Any, new: Any) -> None:
        self.epoch += 1
        for fn in self.listeners:
            try:
                fn(kind, old, new)
            except Exception:  # a listener must not break the informer
                log.exception("CSI cache listener failed")

    # --- reads --------------------------------------------------------------------------

    def attachments_on(self, node_name: str) -> list[VolumeAttachment]:
        """VolumeAttachments whose spec.nodeName is `node_name`, by name."""
        on_node = self._on_node.get(node_name)
        return [on_node[k] for k in sorted(on_node)] if on_node else []

    def nodes_with_attachments(self) -> list[str]:
        return sorted(self._on_node)
