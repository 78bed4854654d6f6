"""Which plugins run at each point, in which order, with which score weight: kube-scheduler
1.36's rules (resolve.py). Ported tables, ids = kube's row names:

- TestMergePlugins (config/v1/default_plugins_test.go) on `merge_multi_point`, kube's
  mergePluginSet (the rows about one PluginSet; the feature-gate rows are kube's defaults).
- TestNewFrameworkMultiPointExpansion (framework/runtime/framework_test.go) on
  `resolve_profile`, with kube's test plugins; the defaults are disabled ("*") since kube's
  framework test starts from none. The PlacementGenerate/PlacementScore points and their
  plugin are left out (Phalanx has no such points).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import (
    Plugin,
    PluginRef,
    PluginSet,
    SchedulerConfiguration,
    SchedulerProfile,
    Status,
    register_plugin,
)
from phalanx.scheduler.framework.resolve import ProfileError, merge_multi_point, resolve_profile

from ..helpers import node, pod, run_scheduler

# --- kube's test plugins ------------------------------------------------------------------


@register_plugin
class _TestPlugin(Plugin):
    """framework_test.go TestPlugin: every extension point kube has."""

    NAME = "test-plugin"

    def sort_key(self, qpi: Any) -> tuple[Any, ...]:
        return ()

    def pre_filter(self, state: Any, pod: Any, snap: Any) -> Any:
        return None, Status()

    def filter(self, state: Any, pod: Any, snap: Any, idx: Any) -> Any:
        raise NotImplementedError

    def post_filter(self, state: Any, pod: Any, fit: Any) -> Any:
        return None, Status.unschedulable("")

    def pre_score(self, state: Any, pod: Any, snap: Any, idx: Any) -> Status:
        return Status()

    def score(self, state: Any, pod: Any, snap: Any, idx: Any) -> Any:
        return np.zeros(idx.size)

    def reserve(self, state: Any, pod: Any, node: str) -> Status:
        return Status()

    def permit(self, state: Any, pod: Any, node: str) -> Any:
        return Status(), 0.0

    async def pre_bind(self, state: Any, pod: Any, node: str) -> Status:
        return Status()

    async def bind(self, state: Any, pod: Any, node: str) -> Status:
        return Status()

    def post_bind(self, state: Any, pod: Any, node: str) -> None:
        return None


class _ScorePlugin(Plugin):
    """TestScorePlugin: PreScore and Score."""

    def pre_score(self, state: Any, pod: Any, snap: Any, idx: Any) -> Status:
        return Status()

    def score(self, state: Any, pod: Any, snap: Any, idx: Any) -> Any:
        return np.zeros(idx.size)


@register_plugin
class _ScorePlugin1(_ScorePlugin):
    NAME = "score-plugin-1"


@register_plugin
class _ScorePlugin2(_ScorePlugin):
    NAME = "score-plugin-2"


@register_plugin
class _ScoreWithNormalizePlugin1(Plugin):
    """TestScoreWithNormalizePlugin: Score only."""

    NAME = "score-with-normalize-plugin-1"

    def score(self, state: Any, pod: Any, snap: Any, idx: Any) -> Any:
        return np.zeros(idx.size)

    def normalize_score(self, state: Any, pod: Any, scores: Any) -> Any:
        return scores


@register_plugin
class _QueueSortPlugin(Plugin):
    NAME = "no-op-queue-sort-plugin"

    def sort_key(self, qpi: Any) -> tuple[Any, ...]:
        return ()


@register_plugin
class _BindPlugin(Plugin):
    NAME = "bind-plugin"

    async def bind(self, state: Any, pod: Any, node: str) -> Status:
        return Status()


TEST, SCORE1, SCORE2 = "test-plugin", "score-plugin-1", "score-plugin-2"
NORMALIZE1, QUEUE_SORT, BIND = "score-with-normalize-plugin-1", "no-op-queue-sort-plugin", "bind-plugin"


def _resolved(plugins: dict[str, Any]) -> dict[str, list[Any]]:
    """Non-empty points: plugin names, and (name, weight) at score (0 or none: 1, as kube)."""
    prof = SchedulerProfile.model_validate({"schedulerName": "p", "plugins": plugins})
    out: dict[str, list[Any]] = {}
    for point, refs in resolve_profile(prof).items():
        if refs:
            out[point] = [(r.name, r.weight or 1) if point == "score" else r.name for r in refs]
    return out


def _without_defaults(plugins: dict[str, Any]) -> dict[str, Any]:
    mp = dict(plugins.get("multiPoint", {}))
    mp["disabled"] = [*mp.get("disabled", []), {"name": "*"}]
    return {**plugins, "multiPoint": mp}


def _all(name: str, **override: Any) -> dict[str, list[Any]]:
    """`name` alone at every point TestPlugin implements."""
    points = ["queueSort", "preFilter", "filter", "postFilter", "preScore", "reserve",
              "permit", "preBind", "bind", "postBind"]
    out: dict[str, list[Any]] = {p: [name] for p in points}
    out["score"] = [(name, 1)]
    out.update(override)
    return {p: out[p] for p in [*points[:5], "score", *points[5:]] if out.get(p)}


def _set(*names: str | tuple[str, int], disabled: tuple[str, ...] = ()) -> dict[str, Any]:
    enabled = [{"name": n} if isinstance(n, str) else {"name": n[0], "weight": n[1]} for n in names]
    return {"enabled": enabled, "disabled": [{"name": n} for n in disabled]}


MULTI_POINT_EXPANSION: list[tuple[str, dict[str, Any], dict[str, list[Any]] | str]] = [
    ("plugin expansion", {"multiPoint": _set((TEST, 5))}, _all(TEST, score=[(TEST, 5)])),
    ("disable MultiPoint plugin at some extension points",
     {"multiPoint": _set(TEST), "preScore": _set(disabled=(TEST,)),
      "score": _set(disabled=(TEST,))},
     _all(TEST, preScore=[], score=[])),
    ("Multiple MultiPoint plugins", {"multiPoint": _set(TEST, SCORE1)},
     _all(TEST, preScore=[TEST, SCORE1], score=[(TEST, 1), (SCORE1, 1)])),
    ("disable MultiPoint extension",
     {"multiPoint": _set(TEST, SCORE1), "preScore": _set(disabled=("*",))},
     _all(TEST, preScore=[], score=[(TEST, 1), (SCORE1, 1)])),
    ("Reorder MultiPoint plugins (specified extension takes precedence)",
     {"multiPoint": _set(NORMALIZE1, TEST, SCORE1), "score": _set(SCORE1, TEST)},
     _all(TEST, preScore=[TEST, SCORE1], score=[(SCORE1, 1), (TEST, 1), (NORMALIZE1, 1)])),
    ("Reorder MultiPoint plugins (specified extension only takes precedence when it exists in MultiPoint)",
     {"multiPoint": _set(TEST, SCORE1), "score": _set(NORMALIZE1, SCORE1, TEST)},
     _all(TEST, preScore=[TEST, SCORE1], score=[(SCORE1, 1), (TEST, 1), (NORMALIZE1, 1)])),
    ("Override MultiPoint plugins weights",
     {"multiPoint": _set(TEST, SCORE1), "score": _set((SCORE1, 5), (TEST, 3))},
     _all(TEST, preScore=[TEST, SCORE1], score=[(SCORE1, 5), (TEST, 3)])),
    ("disable and enable MultiPoint plugins with '*'",
     {"multiPoint": _set(QUEUE_SORT, BIND, SCORE1, disabled=("*",))},
     {"queueSort": [QUEUE_SORT], "preScore": [SCORE1], "score": [(SCORE1, 1)], "bind": [BIND]}),
    ("disable and enable MultiPoint plugin by name",
     {"multiPoint": _set(BIND, QUEUE_SORT, SCORE1, disabled=(SCORE1,))},
     {"queueSort": [QUEUE_SORT], "preScore": [SCORE1], "score": [(SCORE1, 1)], "bind": [BIND]}),
    ("Expect 'already registered' error", {"multiPoint": _set(TEST, TEST)}, "already registered"),
    ("Override MultiPoint plugins weights and avoid a plugin being loaded multiple times",
     {"multiPoint": _set(TEST, SCORE1), "score": _set((SCORE1, 5), (SCORE2, 5), (TEST, 3))},
     _all(TEST, preScore=[TEST, SCORE1], score=[(SCORE1, 5), (TEST, 3), (SCORE2, 5)])),
]


@pytest.mark.parametrize(("plugins", "want"), [r[1:] for r in MULTI_POINT_EXPANSION],
                         ids=[r[0] for r in MULTI_POINT_EXPANSION])
def test_new_framework_multi_point_expansion(plugins: dict[str, Any], want: Any) -> None:
    if isinstance(want, str):
        with pytest.raises(ProfileError, match=want):
            _resolved(_without_defaults(plugins))
        return
    assert _resolved(_without_defaults(plugins)) == want


def _refs(*names: str | tuple[str, int]) -> list[PluginRef]:
    return [PluginRef(name=n) if isinstance(n, str) else PluginRef(name=n[0], weight=n[1])
            for n in names]


MERGE_PLUGINS: list[tuple[str, list[PluginRef], PluginSet, list[PluginRef]]] = [
    ("AppendCustomPlugin", _refs("DefaultPlugin1", "DefaultPlugin2"),
     PluginSet(enabled=_refs("CustomPlugin")), _refs("DefaultPlugin1", "DefaultPlugin2", "CustomPlugin")),
    ("InsertAfterDefaultPlugins2", _refs("DefaultPlugin1", "DefaultPlugin2"),
     PluginSet(enabled=_refs("CustomPlugin", "DefaultPlugin2"), disabled=_refs("DefaultPlugin2")),
     _refs("DefaultPlugin1", "CustomPlugin", "DefaultPlugin2")),
    ("InsertBeforeAllPlugins", _refs("DefaultPlugin1", "DefaultPlugin2"),
     PluginSet(enabled=_refs("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"), disabled=_refs("*")),
     _refs("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2")),
    ("ReorderDefaultPlugins", _refs("DefaultPlugin1", "DefaultPlugin2"),
     PluginSet(enabled=_refs("DefaultPlugin2", "DefaultPlugin1"), disabled=_refs("*")),
     _refs("DefaultPlugin2", "DefaultPlugin1")),
    ("ApplyNilCustomPlugin", _refs("DefaultPlugin1", "DefaultPlugin2"), PluginSet(),
     _refs("DefaultPlugin1", "DefaultPlugin2")),
    ("CustomPluginOverrideDefaultPlugin", _refs("Plugin1", "Plugin2", "Plugin3"),
     PluginSet(enabled=_refs(("Plugin1", 2), ("Plugin3", 3))),
     _refs(("Plugin1", 2), "Plugin2", ("Plugin3", 3))),
    ("OrderPreserveAfterOverride", _refs("Plugin1", "Plugin2", "Plugin3"),
     PluginSet(enabled=_refs(("Plugin2", 2), ("Plugin1", 1))),
     _refs(("Plugin1", 1), ("Plugin2", 2), "Plugin3")),
    ("RepeatedCustomPlugin", _refs("Plugin1", "Plugin2", "Plugin3"),
     PluginSet(enabled=_refs("Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4))),
     _refs("Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2))),
    ("Append custom MultiPoint plugin", _refs("DefaultPlugin1", "DefaultPlugin2"),
     PluginSet(enabled=_refs("CustomPlugin")), _refs("DefaultPlugin1", "DefaultPlugin2", "CustomPlugin")),
    ("Append disabled Multipoint plugins", _refs("DefaultPlugin1", "DefaultPlugin2"),
     PluginSet(enabled=_refs("CustomPlugin", "CustomPlugin2"), disabled=_refs("DefaultPlugin2")),
     _refs("DefaultPlugin1", "CustomPlugin", "CustomPlugin2")),
    ("override default MultiPoint plugins with custom value", _refs("DefaultPlugin"),
     PluginSet(enabled=_refs(("DefaultPlugin", 5))), _refs(("DefaultPlugin", 5))),
    ("multipoint with only disabled gets merged", _refs("DefaultPlugin"),
     PluginSet(disabled=_refs("DefaultPlugin")), []),
]


@pytest.mark.parametrize(("defaults", "custom", "want"), [r[1:] for r in MERGE_PLUGINS],
                         ids=[r[0] for r in MERGE_PLUGINS])
def test_merge_plugins(defaults: list[PluginRef], custom: PluginSet, want: list[PluginRef]) -> None:
    got = merge_multi_point(defaults, custom)
    assert [(r.name, r.weight) for r in got] == [(r.name, r.weight) for r in want]


# --- on Phalanx's defaults ----------------------------------------------------------------


def _points(plugins: dict[str, Any]) -> dict[str, list[str]]:
    return {p: [x if isinstance(x, str) else x[0] for x in refs]
            for p, refs in _resolved(plugins).items()}


def test_restating_a_default_in_multi_point_keeps_its_place() -> None:
    """default_plugins.go mergePluginSet "update in place": QueueReclaim re-stated (say, to
    give it args) still runs before DefaultPreemption (it used to move last)."""
    default = _points({})
    restated = _points({"multiPoint": _set("QueueReclaim", ("NodeAffinity", 5))})
    assert restated == default
    assert default["postFilter"] == ["DynamicResources", "QueueReclaim", "DefaultPreemption",
                                     "GangReservation"]
    assert dict(_resolved({"multiPoint": _set(("NodeAffinity", 5))})["score"])["NodeAffinity"] == 5


@pytest.mark.parametrize(
    ("plugins", "reason"),
    [
        pytest.param({}, "node(s) didn't match Pod's node affinity/selector", id="defaults"),
        pytest.param({"multiPoint": _set(("NodeAffinity", 5))},
                     "node(s) didn't match Pod's node affinity/selector",
                     id="NodeAffinity re-weighted in multiPoint: still before NodeResourcesFit"),
        pytest.param({"multiPoint": _set(disabled=("NodeAffinity",)), "filter": _set("NodeAffinity")},
                     "Insufficient cpu", id="NodeAffinity only at filter: after NodeResourcesFit"),
    ],
)
def test_filter_order_decides_the_reason_a_node_is_rejected(plugins: dict[str, Any],
                                                             reason: str) -> None:
    """A 4-cpu pod for zone b, two 2-cpu nodes in zone a: the first filter to reject a node
    gives its reason, as in kube."""
    prof = SchedulerProfile.model_validate({"plugins": plugins})

    async def body(client: MemoryCluster, sched: Scheduler) -> Any:
        assert await sched.wait_idle(timeout=30)
        return sched.diagnosis("default/p").reason_counts

    counts = run_scheduler(body, nodes=[node(f"n{i}", cpu="2", labels={"zone": "a"}) for i in (1, 2)],
                           pods=[pod("p", cpu="4", node_selector={"zone": "b"})],
                           scheduler_factory=lambda c: Scheduler(c, [prof]))
    assert counts == {reason: 2}


def test_a_plugin_enabled_only_at_one_point_runs_after_the_multi_point_ones() -> None:
    """framework.go expandMultiPointPlugins, part 3 (it used to run first)."""
    points = _points({"multiPoint": _set(disabled=("NodeAffinity",)),
                      "filter": _set("NodeAffinity")})
    assert points["filter"][-1] == "NodeAffinity"
    assert points["filter"][:3] == ["NodeUnschedulable", "NodeName", "TaintToleration"]
    assert "NodeAffinity" not in points["score"]


def test_a_default_re_enabled_at_its_point_runs_first_there() -> None:
    """Part 1: enabled at the point and in the merged multiPoint list (an override)."""
    resolved = _resolved({"score": _set(("NodeAffinity", 7), ("TaintToleration", 0))})
    assert resolved["score"][:2] == [("NodeAffinity", 7), ("TaintToleration", 1)]
    assert _points({})["filter"].index("NodeAffinity") == 3  # other points keep the defaults


@pytest.mark.parametrize(
    ("plugins", "message"),
    [
        pytest.param({"multiPoint": _set(("NodeAffinity", 2), ("NodeAffinity", 5))},
                     'plugin "NodeAffinity" already registered as "PreFilterPlugin" '
                     "(plugins.multiPoint.enabled)", id="twice in multiPoint"),
        pytest.param({"score": _set(("NodeAffinity", 2), ("NodeAffinity", 5))},
                     'plugin "NodeAffinity" already registered as "ScorePlugin" '
                     "(plugins.score.enabled)", id="twice at score"),
        pytest.param({"filter": _set("NodeAffinity", "NodeAffinity")},
                     'plugin "NodeAffinity" already registered as "FilterPlugin"', id="twice at filter"),
    ],
)
def test_a_plugin_named_twice_in_one_enabled_list_is_refused(plugins: dict[str, Any],
                                                              message: str) -> None:
    """framework.go updatePluginList / expandMultiPointPlugins (it used to run twice, or the
    earlier entry was dropped)."""
    with pytest.raises(ProfileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Scheduler(MemoryCluster(), [SchedulerProfile.model_validate({"plugins": plugins})])


# --- score weights ------------------------------------------------------------------------


def test_weight_zero_or_unset_means_one() -> None:
    """framework.go getValidScoreWeights: "a weight of zero is not permitted" (it used to
    turn the plugin's scoring off)."""
    prof = SchedulerProfile.model_validate({"plugins": {"score": _set(
        ("NodeResourcesFit", 0), "NodeAffinity", ("TaintToleration", 4))}})
    fw = Scheduler(MemoryCluster(), [prof]).frameworks["phalanx-scheduler"]
    weights = dict(zip([p.NAME for p in fw.score_plugins], fw.score_weights, strict=True))
    assert (weights["NodeResourcesFit"], weights["NodeAffinity"], weights["TaintToleration"]) == (1, 1, 4)


@pytest.mark.parametrize("weight", [0, 1])
def test_a_weight_zero_score_plugin_still_decides(weight: int) -> None:
    """NodeResourcesFit (LeastAllocated) alone at score, weight 0: every seed picks the
    emptier node, as with weight 1."""
    picks = []
    for seed in range(6):
        conf = SchedulerConfiguration.model_validate({"seed": seed, "profiles": [{
            "schedulerName": "phalanx-scheduler",
            "plugins": {"score": {"disabled": [{"name": "*"}],
                                  "enabled": [{"name": "NodeResourcesFit", "weight": weight}]}},
            "pluginConfig": [{"name": "NodeResourcesFit",
                              "args": {"scoringStrategy": {"type": "LeastAllocated"}}}]}]})

        async def body(client: MemoryCluster, sched: Scheduler) -> str | None:
            assert await sched.wait_idle(timeout=30)
            from ..helpers import bound_nodes

            return (await bound_nodes(client))["p"]

        picks.append(run_scheduler(body, nodes=[node("small", cpu="2"), node("big", cpu="64", memory="256Gi")],
                                   pods=[pod("p", cpu="1")],
                                   scheduler_factory=lambda c, conf=conf: Scheduler(c, conf)))
    assert picks == ["big"] * 6
