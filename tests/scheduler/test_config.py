"""Profiles: defaults, kube-style merging of enabled/disabled, weights, args, errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import SchedulerConfiguration, SchedulerProfile, default_configuration
from phalanx.scheduler.framework.runtime import ProfileError


def fw_of(profile: dict) -> object:
    prof = SchedulerProfile.model_validate(profile)
    return Scheduler(MemoryCluster(), [prof]).frameworks[prof.scheduler_name]


def test_default_configuration_serves_every_backend_scheduler_name():
    names = [p.scheduler_name for p in default_configuration().profiles]
    assert names == ["default-scheduler", "kai-scheduler", "volcano", "koord-scheduler",
                     "scheduler-plugins-scheduler", "phalanx-scheduler"]


def test_default_profile_points_and_weights():
    fw = fw_of({})
    points = fw.extension_points()
    assert points["queueSort"] == ["PrioritySort"]
    # kube-scheduler 1.36's order (the volume plugins after NodeResourcesFit)
    assert points["filter"][:10] == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                                     "NodePorts", "NodeResourcesFit", "VolumeRestrictions",
                                     "NodeVolumeLimits", "VolumeBinding", "VolumeZone"]
    assert points["bind"] == ["DefaultBinder"]
    assert "SchedulingGates" in points["preEnqueue"]
    weights = dict(zip([p.NAME for p in fw.score_plugins], fw.score_weights, strict=True))
    assert weights["TaintToleration"] == 3 and weights["NodeAffinity"] == 2 and weights["NodeResourcesFit"] == 1


def test_yaml_style_profile_merges_like_kube_scheduler():
    fw = fw_of(
        {
            "schedulerName": "custom",
            "plugins": {
                "score": {"disabled": [{"name": "TaintToleration"}], "enabled": [{"name": "NodeAffinity", "weight": 7}]},
                "filter": {"disabled": [{"name": "NodeUnschedulable"}]},
            },
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}],
        }
    )
    points = fw.extension_points()
    assert "TaintToleration" not in points["score"] and "TaintToleration" in points["filter"]
    # Re-enabled at score and a default (so in the multiPoint list too): kube's "part 1", first.
    assert points["score"][0] == "NodeAffinity"
    assert dict(zip(points["score"], fw.score_weights, strict=True))["NodeAffinity"] == 7
    assert "NodeUnschedulable" not in points["filter"]
    assert fw.plugins["NodeResourcesFit"].most_allocated


def test_disable_star_removes_every_default_at_that_point():
    fw = fw_of({"plugins": {"score": {"disabled": [{"name": "*"}]}}})
    assert fw.extension_points()["score"] == []


def test_errors_name_the_problem():
    with pytest.raises(ProfileError, match=r"profiles\[0\]\.pluginConfig\[0\]\.args\.scoringStrategy\.type"):
        fw_of({"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Nope"}}}]})
    with pytest.raises(ProfileError, match="does not implement bind"):
        fw_of({"plugins": {"bind": {"enabled": [{"name": "NodeAffinity"}]}}})
    with pytest.raises(ProfileError, match="exactly one queueSort"):
        fw_of({"plugins": {"queueSort": {"disabled": [{"name": "*"}]}}})
    with pytest.raises(ValidationError, match="Duplicate value"):
        SchedulerConfiguration.model_validate({"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]})
    with pytest.raises(ValidationError):
        SchedulerProfile.model_validate({"plugins": {"scroe": {}}})  # typo: unknown field
