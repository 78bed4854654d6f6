"""The spread parse cache: pods with one spec share the parsed constraints, and the values of
the labels matchLabelKeys name keep them apart (MatchCounter: test_podtopologyspread_counting)."""

from __future__ import annotations

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Pod, PodSpec
from phalanx.scheduler.spread import parse_pod_spread


def _pod(labels: dict[str, str], constraints: list[dict]) -> Pod:
    return Pod(metadata=ObjectMeta(name="p", namespace="ns", labels=labels),
               spec=PodSpec(containers=[Container(name="c", image="i")],
                            topology_spread_constraints=constraints))


def _zone(**extra: object) -> dict:
    return {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}, **extra}


def test_pods_with_one_spec_share_the_parse():
    a = parse_pod_spread(_pod({"app": "web", "i": "0"}, [_zone()]))
    b = parse_pod_spread(_pod({"app": "web", "i": "1"}, [_zone()]))
    assert a is b and a.hard[0].max_skew == 1


def test_match_label_keys_values_are_not_shared():
    a = parse_pod_spread(_pod({"app": "web", "rev": "1"}, [_zone(matchLabelKeys=["rev"])]))
    b = parse_pod_spread(_pod({"app": "web", "rev": "2"}, [_zone(matchLabelKeys=["rev"])]))
    assert a.hard[0].selector != b.hard[0].selector
    assert a.hard[0].matches({"app": "web", "rev": "1"})
    assert not a.hard[0].matches({"app": "web", "rev": "2"})
    assert b.hard[0].matches({"app": "web", "rev": "2"})


def test_a_bad_spec_is_still_reported_each_time():
    bad = [_zone(maxSkew="x")]
    for _ in range(2):
        sp = parse_pod_spread(_pod({"app": "web"}, bad))
        assert sp.own and "maxSkew" in sp.error
