"""pluginConfig args are validated as kube-scheduler's validatePluginConfig validates them:
for every plugin Phalanx knows, enabled or not; each error named from the configuration's
root (`profiles[i].pluginConfig[j].args.<field>`); Phalanx's own plugins without args refuse
any key; every problem of every profile reported at once."""

from __future__ import annotations

import re
from typing import Any

import pytest

from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import SchedulerConfiguration
from phalanx.scheduler.framework.resolve import ProfileError
from phalanx.scheduler.plugins.volumebinding import DEFAULT_SHAPE, VolumeBindingArgs, shape_score


def _build(*profiles: dict[str, Any]) -> Scheduler:
    conf = SchedulerConfiguration.model_validate({"profiles": list(profiles)})
    return Scheduler(MemoryCluster(), conf)


def _one(name: str, args: dict[str, Any], **profile: Any) -> Scheduler:
    return _build({"schedulerName": "p", "pluginConfig": [{"name": name, "args": args}], **profile})


def _refused(name: str, args: dict[str, Any], **profile: Any) -> str:
    with pytest.raises(ProfileError) as err:
        _one(name, args, **profile)
    return str(err.value)


ARGS = "profiles[0].pluginConfig[0].args"

REFUSED: list[tuple[str, str, dict[str, Any], str]] = [
    # kube validation_pluginargs.go ValidateDynamicResourcesArgs (both gates on in 1.36)
    ("DynamicResources filterTimeout negative", "DynamicResources", {"filterTimeout": "-1s"},
     f'{ARGS}.filterTimeout: Invalid value: "-1s": must be zero or positive'),
    ("DynamicResources bindingTimeout under a second", "DynamicResources",
     {"bindingTimeout": "500ms"}, f'{ARGS}.bindingTimeout: Invalid value: "500ms": must be at least 1 second'),
    ("DynamicResources bindingTimeout other than the default (no binding conditions here)",
     "DynamicResources", {"bindingTimeout": "5m"},
     f'{ARGS}.bindingTimeout: Invalid value: "5m": Phalanx does not support device binding conditions'),
    ("DynamicResources unknown key", "DynamicResources", {"filterTimout": "1s"},
     f"{ARGS}.filterTimout: unknown field; did you mean 'filterTimeout'?"),
    ("DynamicResources filterTimeout not a duration", "DynamicResources", {"filterTimeout": 10},
     f"{ARGS}.filterTimeout: expected a string"),
    # kube ValidateVolumeBindingArgsWithOptions
    ("VolumeBinding shape without capacity scoring", "VolumeBinding",
     {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
     (f'{ARGS}.shape: Invalid value: [{{"utilization": 0, "score": 10}}, {{"utilization": 100, '
      '"score": 0}]: unexpected field `shape`, remove it or turn on the feature gate '
      "StorageCapacityScoring")),
    ("VolumeBinding empty shape without capacity scoring", "VolumeBinding", {"shape": []},
     f"{ARGS}.shape: Invalid value: []: unexpected field `shape`"),
    ("VolumeBinding unsorted shape", "VolumeBinding",
     {"enableStorageCapacityScoring": True,
      "shape": [{"utilization": 50, "score": 10}, {"utilization": 10, "score": 0}]},
     f"{ARGS}.shape[1].utilization: Invalid value: 10: values must be sorted in increasing order"),
    ("VolumeBinding shape score out of range", "VolumeBinding",
     {"enableStorageCapacityScoring": True, "shape": [{"utilization": 0, "score": 11}]},
     f"{ARGS}.shape[0].score: Invalid value: 11: not in valid range [0, 10]"),
    # PodTopologySpreadArgs.defaultConstraints: v1.TopologySpreadConstraint, decoded strictly
    ("PodTopologySpread misspelt constraint field", "PodTopologySpread",
     {"defaultingType": "List", "defaultConstraints": [
         {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomian": 3}]},
     f"{ARGS}.defaultConstraints[0].minDomian: unknown field"),
    ("PodTopologySpread bad nodeAffinityPolicy", "PodTopologySpread",
     {"defaultingType": "List", "defaultConstraints": [
         {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
          "nodeAffinityPolicy": "Bogus"}]},
     f"{ARGS}.defaultConstraints[0].nodeAffinityPolicy: unsupported value 'Bogus'"),
    # Phalanx's plugins without args refuse any key, like its others
    ("TopologyPacking any key", "TopologyPacking", {"whatever": 1}, f"{ARGS}.whatever: unknown field"),
    ("UnsupportedPodFields any key", "UnsupportedPodFields", {"whatever": 1},
     f"{ARGS}.whatever: unknown field"),
    # Phalanx's DefaultPreemption victimGraceSeconds
    ("DefaultPreemption negative victimGraceSeconds", "DefaultPreemption",
     {"victimGraceSeconds": -5}, f"{ARGS}.victimGraceSeconds: must be >= 0"),
    # an aggregate: each of its errors gets the path
    ("NodeResourcesFit two bad ignored names", "NodeResourcesFit",
     {"ignoredResources": ["-a-"], "ignoredResourceGroups": ["example.com/x"]},
     f'[{ARGS}.ignoredResources[0]: Invalid value: "-a-": '),
]


@pytest.mark.parametrize(("name", "args", "message"), [r[1:] for r in REFUSED],
                         ids=[r[0] for r in REFUSED])
def test_bad_args_are_refused_naming_the_field(name: str, args: dict[str, Any], message: str) -> None:
    assert message in _refused(name, args)


def test_each_error_of_an_aggregate_carries_the_path() -> None:
    message = _refused("NodeResourcesFit",
                       {"ignoredResources": ["-a-"], "ignoredResourceGroups": ["example.com/x"]})
    assert f"{ARGS}.ignoredResourceGroups[0]: Invalid value: \"example.com/x\": resource group " \
           "name can't contain '/'" in message


ACCEPTED: list[tuple[str, str, dict[str, Any]]] = [
    ("DynamicResources defaults", "DynamicResources", {}),
    ("DynamicResources filterTimeout 0 (no timeout)", "DynamicResources", {"filterTimeout": "0"}),
    ("DynamicResources the default bindingTimeout, spelt otherwise", "DynamicResources",
     {"filterTimeout": "30s", "bindingTimeout": "600s"}),
    ("TopologyPacking no args", "TopologyPacking", {}),
    ("UnsupportedPodFields no args", "UnsupportedPodFields", {}),
    ("DefaultPreemption victimGraceSeconds 0", "DefaultPreemption", {"victimGraceSeconds": 0}),
    ("a name no plugin has (kube skips args it has no type for)", "NodeResourceFit", {"x": 1}),
]


@pytest.mark.parametrize(("name", "args"), [r[1:] for r in ACCEPTED], ids=[r[0] for r in ACCEPTED])
def test_good_args_are_accepted(name: str, args: dict[str, Any]) -> None:
    _one(name, args)


def test_args_of_a_disabled_plugin_are_validated_too() -> None:
    """kube validates the args of every known plugin, enabled or not."""
    disabled = {"plugins": {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}}}
    message = _refused("InterPodAffinity", {"hardPodAffinityWeight": 500}, **disabled)
    assert message.startswith(f"{ARGS}.hardPodAffinityWeight: must be <= 100")
    _one("InterPodAffinity", {"hardPodAffinityWeight": 50}, **disabled)


def test_the_path_names_the_profile_and_the_entry() -> None:
    with pytest.raises(ProfileError) as err:
        _build({"schedulerName": "a"},
               {"schedulerName": "b", "pluginConfig": [
                   {"name": "NodeResourcesFit", "args": {}},
                   {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": -1}}]})
    assert re.match(r"profiles\[1\]\.pluginConfig\[1\]\.args\.hardPodAffinityWeight: must be >= 0",
                    str(err.value))


def test_every_profile_is_reported_at_once() -> None:
    with pytest.raises(ProfileError) as err:
        _build({"schedulerName": "a", "pluginConfig": [{"name": "TopologyPacking", "args": {"x": 1}}]},
               {"schedulerName": "b", "pluginConfig": [{"name": "DynamicResources",
                                                         "args": {"filterTimeout": "-1s"}}]})
    message = str(err.value)
    assert "profiles[0].pluginConfig[0].args.x: unknown field" in message
    assert "profiles[1].pluginConfig[0].args.filterTimeout" in message


def test_the_plugins_get_the_validated_args() -> None:
    sched = _one("DynamicResources", {"filterTimeout": "250ms"})
    assert sched.frameworks["p"].plugins["DynamicResources"].filter_timeout == 0.25
    sched = _one("DynamicResources", {"filterTimeout": "0"})
    assert sched.frameworks["p"].plugins["DynamicResources"].filter_timeout is None
    assert _one("DynamicResources", {}).frameworks["p"].plugins["DynamicResources"].filter_timeout == 10


@pytest.mark.parametrize("shape", [None, []], ids=["no shape", "empty shape"])
def test_capacity_scoring_defaults_to_kube_1_36_shape(shape: list[Any] | None) -> None:
    """config/v1/defaults.go: {0 -> 10}, {100 -> 0} (prefer the least used storage); an
    empty shape is defaulted too (SetDefaults_VolumeBindingArgs: `len(obj.Shape) == 0`)."""
    raw: dict[str, Any] = {"enableStorageCapacityScoring": True}
    if shape is not None:
        raw["shape"] = shape
    args = VolumeBindingArgs.model_validate(raw)
    assert [(p.utilization, p.score) for p in args.shape or ()] == list(DEFAULT_SHAPE) == [(0, 10), (100, 0)]
    assert (shape_score(args.shape or (), 10), shape_score(args.shape or (), 90)) == (90, 10)
    assert VolumeBindingArgs().shape is None  # scoring off: no shape at all
