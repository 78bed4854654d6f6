"""A profile resolved against the plugin registry: which plugins run at each point, in order.

As kube-scheduler 1.36 builds a profile: the defaults are one multiPoint list, merged with the
profile's `multiPoint` (config/v1/default_plugins.go mergePluginSet: a re-stated default is
reconfigured in its default place, new plugins go after the defaults); then each point's
`enabled` list is taken as written and the merged multiPoint list expanded into it
(framework.go updatePluginList, expandMultiPointPlugins).
"""

from __future__ import annotations

from .config import (
    DEFAULT_PLUGINS,
    OPTIONAL_DEFAULT_PLUGINS,
    PluginRef,
    PluginSet,
    SchedulerProfile,
)
from .registry import EXTENSION_POINTS, get_plugin


class ProfileError(ValueError):
    """A profile names an unknown plugin, or a plugin at a point it does not implement."""


def _kube_type(point: str) -> str:
    """kube's plugin interface name for a point, for its messages ("FilterPlugin")."""
    return point[0].upper() + point[1:] + "Plugin"


def merge_multi_point(defaults: list[PluginRef], custom: PluginSet) -> list[PluginRef]:
    """kube's mergePluginSet: defaults less the disabled ones (all with "*"), each default
    the profile re-states replaced in place (the last statement of it), then the profile's
    other plugins in its order. A plugin stated twice stays twice (refused at expansion)."""
    disabled = {r.name for r in custom.disabled}
    restated = {r.name: i for i, r in enumerate(custom.enabled)}
    replaced: set[int] = set()
    out: list[PluginRef] = []
    if "*" not in disabled:
        for ref in defaults:
            if ref.name in disabled:
                continue
            i = restated.get(ref.name)
            if i is not None:
                ref = custom.enabled[i]
                replaced.add(i)
            out.append(ref)
    out += [r for i, r in enumerate(custom.enabled) if i not in replaced]
    return out


def resolve_profile(profile: SchedulerProfile) -> dict[str, list[PluginRef]]:
    """Per extension point, the enabled plugins in kube-scheduler's order: those enabled at
    the point that the merged multiPoint list also names (in the point's order), then the
    multiPoint ones, then those enabled only at the point."""
    defaults = [PluginRef(name=n, weight=w) for n, w in DEFAULT_PLUGINS if n not in OPTIONAL_DEFAULT_PLUGINS or get_plugin(n)]
    multi = merge_multi_point(defaults, profile.plugins.multi_point)
    for ref in multi:
        if get_plugin(ref.name) is None:
            raise ProfileError(f"profile {profile.scheduler_name!r}: unknown plugin {ref.name!r}")
    out: dict[str, list[PluginRef]] = {}
    for point, method in EXTENSION_POINTS.items():
        ps = profile.plugins.for_point(point)
        enabled: list[PluginRef] = []
        names: set[str] = set()
        for ref in ps.enabled:  # updatePluginList
            if ref.name in names:
                raise ProfileError(f"profile {profile.scheduler_name!r}: plugin \"{ref.name}\" already "
                                   f'registered as "{_kube_type(point)}" (plugins.{point}.enabled)')
            names.add(ref.name)
            enabled.append(ref)
        disabled = {r.name for r in ps.disabled}
        if "*" in disabled:
            out[point] = enabled
            continue
        overrides: set[str] = set()
        expanded: list[PluginRef] = []
        expanded_names: set[str] = set()
        for ref in multi:  # expandMultiPointPlugins
            if not callable(getattr(get_plugin(ref.name), method, None)) or ref.name in disabled:
                continue
            if ref.name in names:  # re-configured at the point: that entry wins
                overrides.add(ref.name)
                continue
            if ref.name in expanded_names:
                raise ProfileError(f"profile {profile.scheduler_name!r}: plugin \"{ref.name}\" already "
                                   f'registered as "{_kube_type(point)}" (plugins.multiPoint.enabled)')
            expanded_names.add(ref.name)
            expanded.append(ref)
        out[point] = ([r for r in enabled if r.name in overrides] + expanded
                      + [r for r in enabled if r.name not in overrides])
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
