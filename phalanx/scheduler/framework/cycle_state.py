"""Per-cycle scratch space plugins share (kube-scheduler's framework.CycleState)."""

from __future__ import annotations

from typing import Any


class CycleState:
    """Data one pod's scheduling cycle passes between its plugins.

    Plugins write under their own keys (use the plugin name as a prefix). The binding cycle
    reads the same state, so values written in Reserve are visible in PreBind and Bind.
    """

    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins", "pods_to_activate", "record_metrics",
                 "filter_error")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        # Filled by the runtime from PreFilter/PreScore Skip results.
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # Pod keys a plugin wants moved to activeQ when this cycle ends (e.g. gang peers).
        self.pods_to_activate: dict[str, Any] = {}
        self.record_metrics = False
        # An Error a Filter plugin met on some node (kube's Error status from Filter; the
        # plugin also rejects the node): the scheduling cycle stops with it and the pod
        # retries after backoff. What-ifs run on their own state and only see the rejection.
        self.filter_error: Any = None

    def read(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def clone(self) -> CycleState:
        """A shallow copy (values are shared; plugins that mutate must copy-on-write)."""
        out = CycleState()
        out._data = dict(self._data)
        out.skip_filter_plugins = set(self.skip_filter_plugins)
        out.skip_score_plugins = set(self.skip_score_plugins)
        return out
