"""ServiceSelectorIndex (phalanx/scheduler/spread_defaults.py) finds exactly the Services a
linear walk of the namespace finds (kube's helper.DefaultSelector walks them all), through any
sequence of adds, selector changes and deletes; and DefaultSelectors, which remembers the
merged selector of pods behind the same Services, answers what a fresh merge answers."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.scheduler.spread_defaults import DefaultSelectors, ServiceSelectorIndex, _scan

KEYS = ("app", "part-of", "replica", "tier")
VALUES = ("a", "b", "c")
labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)
selector_st = st.one_of(st.none(), labels_st)
op_st = st.tuples(st.sampled_from(("put", "delete")), st.sampled_from(("ns1", "ns2")),
                  st.sampled_from(("s0", "s1", "s2", "s3", "s4")), selector_st)


def _svc(ns: str, name: str, selector: dict[str, str] | None) -> SimpleNamespace:
    return SimpleNamespace(metadata=SimpleNamespace(namespace=ns, name=name),
                           spec=SimpleNamespace(selector=selector))


def _apply(index: ServiceSelectorIndex, live: dict[tuple[str, str], SimpleNamespace],
           op: str, ns: str, name: str, selector: dict[str, str] | None) -> None:
    """Put (add or update) or delete a Service, in the index and in `live`."""
    old = live.get((ns, name))
    if op == "delete":
        if old is not None:
            index.delete(live.pop((ns, name)))
        return
    new = _svc(ns, name, selector)
    live[(ns, name)] = new
    if old is None:
        index.add(new)
    else:
        index.update(old, new)


def _selectors_in(live: dict[tuple[str, str], SimpleNamespace]):
    """A ServiceLookup walking every live Service of a namespace."""
    return lambda ns: [s.spec.selector for (n, _), s in live.items() if n == ns]


def _canon(selectors) -> list[tuple[tuple[str, str], ...]]:
    return sorted(tuple(sorted(s.items())) for s in selectors)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(op_st, max_size=30), pods=st.lists(labels_st, min_size=1, max_size=6))
def test_the_index_matches_what_a_walk_of_every_service_matches(ops, pods):
    index = ServiceSelectorIndex()
    live: dict[tuple[str, str], SimpleNamespace] = {}
    for op in ops:
        _apply(index, live, *op)
    walk = _scan(_selectors_in(live))
    for labels in pods:
        for ns in ("ns1", "ns2", "ns3"):
            assert _canon(index.matching(ns, labels)) == _canon(walk(ns, labels))


def test_a_label_every_service_shares_is_not_where_a_selector_is_filed():
    index = ServiceSelectorIndex()
    for i in range(50):
        index.add(_svc("ns", f"s{i}", {"managed-by": "grove", "part-of": f"pcs-{i}"}))
    pod = {"managed-by": "grove", "part-of": "pcs-7"}
    assert [dict(s) for s in index.matching("ns", pod)] == [
        {"managed-by": "grove", "part-of": "pcs-7"}]
    # Filed under the rare pair, so the shared one holds at most the first selector.
    assert len(index._anchored["ns"].get(("managed-by", "grove"), {})) <= 1


def _pod(ns: str, labels: dict[str, str]) -> SimpleNamespace:
    return SimpleNamespace(namespace=ns, labels=labels,
                           pod=SimpleNamespace(metadata=SimpleNamespace(owner_references=[])))


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.one_of(op_st, st.tuples(st.just("ask"), st.sampled_from(("ns1", "ns2")),
                                                 labels_st)), max_size=40))
def test_remembered_default_selectors_follow_every_service_change(steps):
    """Pods asked about between Service adds, selector changes and deletes get the selector a
    walk of every Service merges at that moment, never one remembered from before."""
    index = ServiceSelectorIndex()
    remembered = DefaultSelectors(matching=index.matching)
    live: dict[tuple[str, str], SimpleNamespace] = {}
    for step in steps:
        if step[0] == "ask":
            _, ns, labels = step
            fresh = DefaultSelectors(services=_selectors_in(live))
            assert remembered.for_pod(_pod(ns, labels)) == fresh.for_pod(_pod(ns, labels))
        else:
            _apply(index, live, *step)
