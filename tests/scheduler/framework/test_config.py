"""SchedulerConfiguration's own checks, as kube-scheduler's ValidateKubeSchedulerConfiguration
(validation.go) makes them: schedulerName, the backoffs (int64 seconds), a plugin configured
twice, and the plugins kube removed from the v1 API. Plugin args: test_pluginargs.py."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import SchedulerConfiguration, SchedulerProfile
from phalanx.scheduler.framework.config import DEFAULT_PROFILE_NAME


def _refused(doc: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as err:
        SchedulerConfiguration.model_validate(doc)
    return str(err.value)


# --- schedulerName ------------------------------------------------------------------------


def test_a_lone_profile_without_scheduler_name_serves_phalanx_scheduler() -> None:
    """Phalanx's documented default (kube-scheduler's would be default-scheduler)."""
    conf = SchedulerConfiguration.model_validate({"profiles": [{}]})
    assert conf.profiles[0].scheduler_name == DEFAULT_PROFILE_NAME == "phalanx-scheduler"
    sched = Scheduler(MemoryCluster(), [SchedulerProfile()])
    assert list(sched.frameworks) == ["phalanx-scheduler"]


@pytest.mark.parametrize(
    ("profiles", "path"),
    [
        pytest.param([{"schedulerName": ""}], "profiles[0]", id="empty, one profile"),
        pytest.param([{}, {"schedulerName": "b"}], "profiles[0]", id="omitted, two profiles"),
        pytest.param([{"schedulerName": "a"}, {}], "profiles[1]", id="omitted in the second"),
        pytest.param([{"schedulerName": "a"}, {"schedulerName": ""}], "profiles[1]",
                     id="empty in the second"),
    ],
)
def test_scheduler_name_is_required(profiles: list[dict[str, Any]], path: str) -> None:
    """kube validation.go: `profiles[i].schedulerName: Required value`."""
    assert f"{path}.schedulerName: Required value" in _refused({"profiles": profiles})


def test_several_profiles_built_in_python_need_their_names_too() -> None:
    with pytest.raises(ValidationError, match=r"profiles\[1\].schedulerName: Required value"):
        Scheduler(MemoryCluster(), [SchedulerProfile(scheduler_name="a"), SchedulerProfile()])


# --- backoffs -----------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["podInitialBackoffSeconds", "podMaxBackoffSeconds"])
@pytest.mark.parametrize("value", [0.5, 2.5, "3", True])
def test_backoffs_are_whole_seconds(field: str, value: Any) -> None:
    """int64 in kube: a fraction (or a string, or a boolean) is refused, naming the field."""
    doc = {"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 10, field: value}
    message = _refused(doc)
    assert field in message and "valid integer" in message


def test_a_whole_float_backoff_is_that_integer() -> None:
    """YAML `2.0` reaches kube as JSON 2 (sigs.k8s.io/yaml), an int64 like any other."""
    conf = SchedulerConfiguration.model_validate({"podInitialBackoffSeconds": 2.0,
                                                  "podMaxBackoffSeconds": 4})
    assert conf.pod_initial_backoff_seconds == 2 and isinstance(conf.pod_initial_backoff_seconds, int)
    assert (SchedulerConfiguration().pod_initial_backoff_seconds,
            SchedulerConfiguration().pod_max_backoff_seconds) == (1, 10)


# --- pluginConfig -------------------------------------------------------------------------


def test_a_plugin_configured_twice_is_refused() -> None:
    """kube validation.go: `profiles[0].pluginConfig[1]: Duplicate value: "NodeResourcesFit"`
    (the second entry used to be dropped silently)."""
    doc = {"profiles": [{"schedulerName": "p", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "LeastAllocated"}}}]}]}
    assert 'profiles[0].pluginConfig[1]: Duplicate value: "NodeResourcesFit"' in _refused(doc)


def test_the_same_name_in_two_profiles_is_no_duplicate() -> None:
    entry = {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5}}
    SchedulerConfiguration.model_validate({"profiles": [
        {"schedulerName": "a", "pluginConfig": [entry]},
        {"schedulerName": "b", "pluginConfig": [entry]}]})


@pytest.mark.parametrize("name", ["AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"])
def test_plugins_removed_from_the_v1_api_are_refused_in_plugin_config(name: str) -> None:
    """kube validation.go invalidPluginsByVersion: the message names the version."""
    message = _refused({"profiles": [{"schedulerName": "p", "pluginConfig": [{"name": name}]}]})
    assert (f'profiles[0].pluginConfig[0]: Invalid value: "{name}": was invalid in version '
            '"kubescheduler.config.k8s.io/v1" (SchedulerConfiguration is version '
            '"phalanx.io/v1alpha1")') in message


def test_plugins_removed_from_the_v1_api_are_refused_at_an_extension_point() -> None:
    doc = {"profiles": [{"schedulerName": "p",
                         "plugins": {"filter": {"enabled": [{"name": "NodeAffinity"},
                                                            {"name": "EBSLimits"}]}}}]}
    assert 'profiles[0].plugins.filter.enabled[1]: Invalid value: "EBSLimits"' in _refused(doc)


def test_every_problem_is_reported_at_once() -> None:
    message = _refused({"profiles": [
        {"pluginConfig": [{"name": "EBSLimits"}, {"name": "X"}, {"name": "X"}]},
        {"schedulerName": ""}]})
    for part in ("profiles[0].schedulerName: Required value",
                 'profiles[0].pluginConfig[0]: Invalid value: "EBSLimits"',
                 'profiles[0].pluginConfig[2]: Duplicate value: "X"',
                 "profiles[1].schedulerName: Required value"):
        assert part in message


@pytest.mark.parametrize(("api_version", "kind", "ok"), [
    ("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration", True),
    ("phalanx.io/v1alpha1", "SchedulerConfiguration", True),
    ("kubescheduler.config.k8s.io/v1beta3", "KubeSchedulerConfiguration", False),
    ("nonsense/v9", "Banana", False),
])
def test_the_configuration_names_a_known_api_version_and_kind(api_version: str, kind: str,
                                                               ok: bool) -> None:
    doc = {"apiVersion": api_version, "kind": kind, "profiles": [{"schedulerName": "a"}]}
    if ok:
        assert SchedulerConfiguration.model_validate(doc).kind == kind
    else:
        assert "apiVersion/kind: Unsupported value" in _refused(doc)
