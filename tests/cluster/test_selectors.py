import pytest

from phalanx.api.base import ObjectMeta
from phalanx.cluster.selectors import (
    SelectorError,
    check_labels,
    parse_field_selector,
    parse_label_selector,
)

from .kinds import make_pod


def matches(sel, labels):
    return parse_label_selector(sel).matches(labels)


def test_equality_and_inequality():
    assert matches("app=web", {"app": "web"})
    assert matches("app==web", {"app": "web"})
    assert not matches("app=web", {"app": "db"})
    assert not matches("app=web", {})
    assert matches("app!=web", {"app": "db"})
    assert matches("app!=web", {})  # absent keys satisfy != (as in Kubernetes)
    assert not matches("app!=web", {"app": "web"})


def test_set_based_and_existence():
    sel = "env in (prod, staging),tier notin (db),gpu,!legacy"
    assert matches(sel, {"env": "prod", "tier": "web", "gpu": "a100"})
    assert not matches(sel, {"env": "dev", "gpu": "x"})
    assert not matches(sel, {"env": "prod", "tier": "db", "gpu": "x"})
    assert not matches(sel, {"env": "prod"})  # gpu missing
    assert not matches(sel, {"env": "prod", "gpu": "x", "legacy": "true"})
    assert matches("tier notin (db)", {})


def test_gt_lt():
    assert matches("rank>3", {"rank": "4"})
    assert not matches("rank>3", {"rank": "3"})
    assert matches("rank<3", {"rank": "2"})
    assert not matches("rank<3", {"rank": "x"})


def test_empty_selectors_match_everything():
    for sel in (None, "", {}, {"matchLabels": {}}):
        assert matches(sel, {"a": "b"})
        assert matches(sel, {})


def test_dict_and_label_selector_object():
    assert matches({"app": "web"}, {"app": "web", "x": "y"})
    assert not matches({"app": "web"}, {"app": "db"})
    sel = {"matchLabels": {"app": "web"},
           "matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]},
                                {"key": "old", "operator": "DoesNotExist"}]}
    assert matches(sel, {"app": "web", "env": "b"})
    assert not matches(sel, {"app": "web", "env": "c"})
    assert not matches(sel, {"app": "web", "env": "a", "old": "1"})


def test_round_trip_string():
    sel = parse_label_selector("a=b,c!=d,e in (y,x),f,!g")
    assert str(sel) == "a=b,c!=d,e in (x,y),f,!g"
    assert parse_label_selector(str(sel)) == sel


@pytest.mark.parametrize("bad, fragment", [
    ("a in (", "unclosed"),
    ("a=b,,c=d", "empty term"),
    ("a b c", "expected"),
    ("-bad-=x", "invalid label key"),
    ("a=b c", "expected"),
    ("rank>x", "integer"),
    ("a in ()", "at least one value"),
])
def test_bad_label_selectors_name_the_selector(bad, fragment):
    with pytest.raises(SelectorError) as err:
        parse_label_selector(bad)
    assert repr(bad) in str(err.value)
    assert fragment in str(err.value)


def test_bad_label_selector_object():
    with pytest.raises(SelectorError, match="unknown operator 'Is'"):
        parse_label_selector({"matchExpressions": [{"key": "a", "operator": "Is"}]})
    with pytest.raises(SelectorError, match="needs values"):
        parse_label_selector({"matchExpressions": [{"key": "a", "operator": "In"}]})


def test_field_selectors_on_camel_case_paths():
    pod = make_pod("p1", "ns1", node="n1", scheduler="gang")
    assert parse_field_selector("metadata.name=p1").matches(pod)
    assert parse_field_selector("metadata.namespace==ns1,spec.nodeName=n1").matches(pod)
    assert parse_field_selector("spec.schedulerName=gang").matches(pod)
    assert not parse_field_selector("spec.nodeName!=n1").matches(pod)
    assert parse_field_selector("status.phase=Pending").matches(pod)
    unbound = make_pod("p2")
    assert parse_field_selector("spec.nodeName=").matches(unbound)
    assert parse_field_selector({"spec.nodeName": ""}).matches(unbound)
    assert not parse_field_selector("spec.nodeName=").matches(pod)


def test_bad_field_selectors():
    with pytest.raises(SelectorError, match="'nonsense'"):
        parse_field_selector("nonsense")
    sel = parse_field_selector("spec.nodeNam=x")
    with pytest.raises(SelectorError, match="no field 'nodeNam'"):
        sel.matches(make_pod("p"))


def test_check_labels():
    assert check_labels({"app": "web", "grove.io/podgang": "g-0"}) is None
    assert "invalid label key" in check_labels({"bad key": "x"})
    assert "invalid value" in check_labels({"k": "x" * 64})


def test_selectors_are_parsed_once():
    assert parse_label_selector("a=b") is parse_label_selector("a=b")
    meta = ObjectMeta(labels={"a": "b"})
    assert parse_label_selector("a=b").matches(meta.labels)


def test_a_selector_hashes_its_requirements_once(monkeypatch) -> None:
    """Selectors key the scheduler's caches, looked up several times per pod: the hash is
    worked out once, and equal selectors still hash and compare equal."""
    from phalanx.cluster.selectors import Requirement

    a = parse_label_selector({"matchLabels": {"app": "a", "tier": "x"}})
    b = parse_label_selector("app=a,tier=x")
    other = parse_label_selector("app=a,tier=y")
    for sel in (a, b, other):
        hash(sel)
    calls = []
    plain = Requirement.__hash__
    monkeypatch.setattr(Requirement, "__hash__", lambda r: calls.append(r) or plain(r))
    assert hash(a) == hash(b) and a == b and {a: 1}[b] == 1
    assert a != other and {a: 1}.get(other) is None
    assert calls == []
