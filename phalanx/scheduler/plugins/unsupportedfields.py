"""UnsupportedPodFields: a pod that asks for what this profile cannot honour is refused, by name.

kube-scheduler honours every placement field of a pod spec through one of its plugins
(phalanx.api.podfields lists which). When a field's plugin is missing from this profile
(not built yet, like DynamicResources, or disabled in the profile's `plugins`), binding the pod
anyway would ignore what the user asked for. Instead the pod stays Unschedulable: PreFilter
rejects it as unresolvable, so the FailedScheduling Event and the PodScheduled=False condition
say which field and why, e.g.

    0/64 nodes are available: spec.resourceClaims needs the DynamicResources plugin,
    which phalanx-scheduler does not have.

Pods that use none of the missing plugins' fields pay one set check; a profile that has every
plugin skips the check altogether.
"""

from __future__ import annotations

from typing import Any

from phalanx.api import podfields
from phalanx.scheduler.framework.config import UNSUPPORTED_POD_FIELDS
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.pluginargs import NoArgs
from phalanx.scheduler.framework.registry import get_plugin, register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import PodInfo, PreFilterResult
from phalanx.scheduler.snapshot import Snapshot


@register_plugin
class UnsupportedPodFields(Plugin):
    NAME = UNSUPPORTED_POD_FIELDS
    Args = NoArgs

    def __init__(self, handle: Any, args: Any = None) -> None:
        super().__init__(handle, args)
        self._missing: dict[str, str] | None = None  # plugin -> why it is missing

    def missing_plugins(self) -> dict[str, str]:
        """Plugins some placement field needs that this profile does not run, with why."""
        if self._missing is None:
            framework = getattr(self.handle, "framework", None)
            enabled = set(framework.plugins) if framework is not None else set()
            missing: dict[str, str] = {}
            for plugin in podfields.plugins_needed():
                if plugin in enabled:
                    continue
                if get_plugin(plugin) is None:
                    missing[plugin] = f"which {self._scheduler()} does not have"
                else:
                    missing[plugin] = f"which profile {self._scheduler()!r} disables"
            self._missing = missing
        return self._missing

    def _scheduler(self) -> str:
        return getattr(self.handle, "profile_name", "") or "this scheduler"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        missing = self.missing_plugins()
        if not missing:
            return None, Status.skip()
        found = podfields.uses(pod.pod.spec, missing)
        if not found:
            return None, Status.skip()
        reasons = [f"{u.path} needs the {u.plugin} plugin, {missing[u.plugin]}" for u in found]
        return None, Status.unresolvable("; ".join(reasons))
