"""A profile resolved against the plugin registry: which plugins run at each point, in order."""

from __future__ import annotations

from .config import DEFAULT_PLUGINS, OPTIONAL_DEFAULT_PLUGINS, PluginRef, SchedulerProfile
from .registry import EXTENSION_POINTS, get_plugin


class ProfileError(ValueError):
    """A profile names an unknown plugin, or a plugin at a point it does not implement."""


def resolve_profile(profile: SchedulerProfile) -> dict[str, list[PluginRef]]:
    """Per extension point, the enabled plugins in order (defaults merged like kube-scheduler)."""
    defaults = [PluginRef(name=n, weight=w) for n, w in DEFAULT_PLUGINS if n not in OPTIONAL_DEFAULT_PLUGINS or get_plugin(n)]
    mp = profile.plugins.multi_point
    mp_disabled = {r.name for r in mp.disabled}
    multi: list[PluginRef] = [] if "*" in mp_disabled else [r for r in defaults if r.name not in mp_disabled]
    for ref in mp.enabled:
        multi = [r for r in multi if r.name != ref.name] + [ref]
    out: dict[str, list[PluginRef]] = {}
    for point, method in EXTENSION_POINTS.items():
        ps = profile.plugins.for_point(point)
        disabled = {r.name for r in ps.disabled}
        chosen: list[PluginRef] = list(ps.enabled)
        names = {r.name for r in chosen}
        if "*" not in disabled:
            for ref in multi:
                if ref.name in names or ref.name in disabled:
                    continue
                cls = get_plugin(ref.name)
                if cls is None:
                    raise ProfileError(f"profile {profile.scheduler_name!r}: unknown plugin {ref.name!r}")
                if callable(getattr(cls, method, None)):
                    chosen.append(ref)
                    names.add(ref.name)
        out[point] = chosen
    return out


def num_nodes_to_score(total: int, percentage: int) -> int:
    """kube-scheduler's numFeasibleNodesToFind: score a sample on big clusters."""
    min_feasible = 100
    if total < min_feasible:
        return total
    pct = percentage
    if pct <= 0:
        pct = max(5, 50 - total // 125)
    if pct >= 100:
        return total
    return max(min_feasible, total * pct // 100)
