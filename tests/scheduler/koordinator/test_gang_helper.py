"""Koordinator's util/gang_helper_test.go, ported against the functions of our Koordinator
source (phalanx/scheduler/gang/sources/coscheduling.py) and the gang model.

Differences, marked in the rows:
- GetGangGroupId joins the sorted gang ids with ","; our gang group is the sorted tuple of
  gang ids and a unit key joins them with "|" (ids carry their source, "coscheduling:ns/name").
  An empty list is the gang's own group here (Koordinator's id is then "").
- GetId builds "namespace/name"; ours is the part of the gang id after the source.

Row not expressible: TestCreateMergePatch (2 subtests) tests Koordinator's helper that builds
a strategic merge patch from two objects; Phalanx has no such helper (its status writes are
JSON merge patches built directly, tested with the scheduler).
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.gang import Gang, GangManager, GangState, Source, gang_id
from phalanx.scheduler.gang.sources.coscheduling import (
    CoschedulingSource,
    declared_minimum,
    gang_groups,
    gang_name,
)

from .kit import LIGHT_MIN, MIN, NAME, PG_LABEL, Koord, kpod, make_pg

SELF = "coscheduling:nsA/self"


def _unit_key(groups: list[str] | None) -> str:
    gg = tuple(sorted(gang_id(Source.COSCHEDULING, *g.split("/")) for g in groups or []))
    st = GangState(SELF, Gang(SELF, Source.COSCHEDULING, "nsA", "self", 1, gang_group=gg))
    return GangManager.unit_key(st)


@pytest.mark.parametrize(
    ("groups", "want"),
    [
        pytest.param(None, [SELF], id="nil slice"),
        pytest.param([], [SELF], id="empty slice"),
        pytest.param(["nsA/gangA"], ["coscheduling:nsA/gangA", SELF], id="single element"),
        pytest.param(
            ["nsA/gangA", "nsB/gangB"],
            ["coscheduling:nsA/gangA", "coscheduling:nsB/gangB", SELF],
            id="already sorted",
        ),
        pytest.param(
            ["nsB/gangB", "nsA/gangA"],
            ["coscheduling:nsA/gangA", "coscheduling:nsB/gangB", SELF],
            id="unsorted — sorts before joining",
        ),
        pytest.param(
            ["nsC/gangC", "nsA/gangA", "nsB/gangB"],
            ["coscheduling:nsA/gangA", "coscheduling:nsB/gangB", "coscheduling:nsC/gangC", SELF],
            id="three elements unsorted",
        ),
    ],
)
def test_GetGangGroupId(groups: list[str] | None, want: list[str]) -> None:
    # The gang itself is always part of its group (see the docstring).
    assert _unit_key(groups) == "|".join(sorted(want))


@pytest.mark.parametrize(
    ("namespace", "name", "want"),
    [
        pytest.param("default", "mypod", "default/mypod", id="normal namespace and name"),
        pytest.param("", "mypod", "/mypod", id="empty namespace"),
        pytest.param("default", "", "default/", id="empty name"),
    ],
)
def test_GetId(namespace: str, name: str, want: str) -> None:
    assert gang_id(Source.COSCHEDULING, namespace, name).partition(":")[2] == want


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(None, None, id="nil pod"),
        pytest.param(kpod("p"), None, id="pod with no gang label"),
        pytest.param(kpod("p", pg="my-gang"), "my-gang", id="pod with PodGroupLabel"),
        pytest.param(kpod("p", ann={NAME: "my-gang"}), "my-gang", id="pod with gang annotation"),
    ],
)
def test_GetGangNameByPod(pod: Any, want: str | None) -> None:
    assert gang_name(pod) == want


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(kpod("p"), None, id="no label or annotation"),
        pytest.param(kpod("p", labels_={LIGHT_MIN: "3"}), 3, id="deprecated label path"),
        pytest.param(
            kpod("p", labels_={LIGHT_MIN: "notanumber"}),
            None,
            id="deprecated label with invalid value",
        ),
        pytest.param(kpod("p", ann={MIN: "5"}), 5, id="annotation path"),
    ],
)
def test_GetGangMinNumFromPod(pod: Any, want: int | None) -> None:
    minimum, why = declared_minimum(pod)
    assert minimum == want
    assert (why is None) == (want is not None)  # an error, named, whenever there is no minimum


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(kpod("p"), False, id="pod with no gang"),
        pytest.param(kpod("p", labels_={PG_LABEL: "my-gang"}), True, id="pod with gang label"),
    ],
)
def test_IsPodNeedGang(pod: Any, want: bool) -> None:
    assert (CoschedulingSource().member(pod) is not None) == want


@pytest.mark.parametrize(
    ("pg", "want"),
    [
        pytest.param(None, 600.0, id="nil PodGroup uses default"),
        pytest.param(
            make_pg("g", timeout=None), 600.0, id="nil ScheduleTimeoutSeconds uses default"
        ),
        pytest.param(make_pg("g", timeout=0), 600.0, id="zero ScheduleTimeoutSeconds uses default"),
        pytest.param(
            make_pg("g", timeout=30), 30.0, id="positive ScheduleTimeoutSeconds overrides default"
        ),
    ],
)
def test_GetWaitTimeDuration(pg: Any, want: float) -> None:
    """The default is koord-scheduler's: 10 minutes, the value the Go test passes."""
    k = Koord()
    if pg is None:  # a gang its pods declare, with no waiting-time
        k.add(kpod("p", ann={NAME: "g", MIN: "1"}))
    else:
        k.add_pg(pg)
        k.add(kpod("p", pg="g"))
    st = k.gang("default", "g")
    assert st is not None and st.spec is not None
    assert (st.spec.schedule_timeout or k.manager.default_timeout_of(st)) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("", [], id="empty string returns nil"),
        pytest.param(
            '["nsA/gangA","nsB/gangB"]',
            ["nsA/gangA", "nsB/gangB"],
            id="valid JSON array with two elements",
        ),
        pytest.param('["nsA/gangA"]', ["nsA/gangA"], id="valid JSON array with single element"),
        pytest.param("[]", [], id="empty JSON array"),
        pytest.param("not-json", [], id="invalid JSON"),
        pytest.param('{"key":"value"}', [], id="JSON object instead of array"),
    ],
)
def test_StringToGangGroupSlice(value: str, want: list[str]) -> None:
    """Invalid values are ignored (Koordinator logs the error and the gang is its own group)."""
    assert [g.partition(":")[2] for g in gang_groups(value, "default")] == want
