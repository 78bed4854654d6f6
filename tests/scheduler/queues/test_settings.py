"""The queue plugins' scheduler-wide arguments (phalanx/scheduler/queues/settings.py): set by
whichever profile's QueueCapacity or QueueReclaim sets them, refused when two set them
differently (naming both), and KAI's defaults (a usage window of 168h, not "1w", which is
no Go duration)."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework.config import SchedulerProfile
from phalanx.scheduler.framework.resolve import ProfileError
from phalanx.scheduler.plugins.queuereclaim import QueueReclaim
from phalanx.scheduler.queues.runtime import SHARED_KEY, QueueRuntime
from phalanx.scheduler.queues.settings import UsageParams


def _scheduler(*profiles: dict[str, Any]) -> Scheduler:
    return Scheduler(MemoryCluster(), [SchedulerProfile.model_validate(p) for p in profiles])


def _runtime(*profiles: dict[str, Any]) -> QueueRuntime:
    return _scheduler(*profiles).shared(SHARED_KEY, lambda: None)


def _args(plugin: str, **args: Any) -> list[dict[str, Any]]:
    return [{"name": plugin, "args": args}]


USAGE = {"windowSize": "24h", "halfLifePeriod": "1h"}


def test_a_later_profile_sets_the_scheduler_wide_arguments() -> None:
    rt = _runtime({"schedulerName": "a"},
                  {"schedulerName": "b", "pluginConfig": _args("QueueCapacity", kValue=3,
                                                               usage=USAGE)})
    assert rt.settings.k_value == 3.0 and rt.usage is not None
    assert rt.usage.window == 24 * 3600


def test_queue_reclaim_args_count_too() -> None:
    sched = _scheduler({"schedulerName": "a", "pluginConfig": _args(
        "QueueReclaim", kValue=3, usage={"windowSize": "24h"}, victimGraceSeconds=5,
        reclaimResolveMethod="queue")})
    rt = sched.shared(SHARED_KEY, lambda: None)
    assert rt.settings.k_value == 3.0 and rt.usage is not None
    reclaim = next(p for fw in sched.frameworks.values() for p in fw.plugins.values()
                   if isinstance(p, QueueReclaim))
    assert reclaim.qargs.reclaim_resolve_method == "queue"


def test_two_profiles_setting_different_values_are_refused_naming_both() -> None:
    with pytest.raises(ProfileError) as err:
        _runtime({"schedulerName": "a", "pluginConfig": _args("QueueCapacity", kValue=2)},
                 {"schedulerName": "b", "pluginConfig": _args("QueueReclaim", kValue=3)})
    msg = str(err.value)
    assert "profile 'b': pluginConfig for QueueReclaim: kValue: 3.0 differs from 2.0 set by " \
           "profile 'a' QueueCapacity" in msg
    # The same value twice is fine.
    _runtime({"schedulerName": "a", "pluginConfig": _args("QueueCapacity", kValue=2)},
             {"schedulerName": "b", "pluginConfig": _args("QueueReclaim", kValue=2)})


def test_default_queue_stays_per_profile_and_not_on_schedulers_without_kai_queues() -> None:
    rt = _runtime({"schedulerName": "a", "pluginConfig": _args("QueueCapacity",
                                                               defaultQueue="qa")},
                  {"schedulerName": "b", "pluginConfig": _args("QueueCapacity",
                                                               defaultQueue="qb")},
                  {"schedulerName": "c"})
    assert (rt.default_queues["a"], rt.default_queues["b"], rt.default_queues["c"]) == \
        ("qa", "qb", None)
    with pytest.raises(ProfileError, match="profile 'volcano' stands in for a scheduler that "
                                           "does not read KAI queues"):
        _runtime({"schedulerName": "volcano", "pluginConfig": _args("QueueCapacity",
                                                                    defaultQueue="q")})


def test_the_usage_window_defaults_to_kais_168h() -> None:
    assert UsageParams().window_size == "168h"
    rt = _runtime({"schedulerName": "a", "pluginConfig": _args(
        "QueueCapacity", usage={"halfLifePeriod": "10m"})})
    assert rt.usage is not None and rt.usage.window == 168 * 3600


def test_the_documented_example_is_accepted() -> None:
    from phalanx.scheduler.queues import settings

    doc = settings.__doc__ or ""
    assert "windowSize: 168h" in doc and "1w" not in doc.split("```")[1]
    _runtime({"schedulerName": "a", "pluginConfig": _args(
        "QueueCapacity", usage={"windowSize": "168h", "halfLifePeriod": "10m"})})
