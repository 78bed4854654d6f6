"""`phalanx describe KIND NAME` for every kind (issue 25 item 13): kubectl's header, the
conditions, the related objects and every Event; for gangs and pods, why they are where they
are or why they wait."""

import pytest

from phalanx.report.describe import describe
from phalanx.report.explain import NotInRun

from .objects import object_record


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(title)
    out = []
    for line in lines[start + 1:]:
        if line and not line.startswith(" "):
            break
        out.append(line.strip())
    return [x for x in out if x]


def test_podcliqueset() -> None:
    text = describe(object_record(), "pcs", "train")
    assert text.splitlines()[:3] == ["Name:          train", "Namespace:     default",
                                     "Kind:          PodCliqueSet (grove.io/v1alpha1)"]
    assert "Gangs:          3/3 scheduled" in text
    related = _section(text, "Related:")
    assert any(r.startswith("PodClique ") and "train-0-worker" in r for r in related)
    assert any(r.startswith("PodCliqueScalingGroup") for r in related)
    assert any(r.startswith("PodGang") and "train-0" in r for r in related)
    assert "SchedulerCompatible" in text and _section(text, "Events:") == ["<none>"]


def test_podclique_and_scaling_group() -> None:
    text = describe(object_record(), "pclq", "train-0-worker")
    assert "Controlled By: PodCliqueSet/train" in text
    assert any(r.startswith("Pod ") and "train-0-worker-[0-3]" in r
               for r in _section(text, "Related:"))
    assert "PodCliqueScheduled" in "\n".join(_section(text, "Conditions:"))
    assert "Spec:" in text and "replicas: 4" in text
    pcsg = describe(object_record(), "pcsg", "train-0-model")
    assert "Kind:          PodCliqueScalingGroup" in pcsg and "cliqueNames:" in pcsg


def test_podgang_says_why_it_waits_and_lists_every_event() -> None:
    text = describe(object_record(), "podgang", "big-0")
    assert "Phase:         Pending" in text and "Why it waits" in text
    assert "preemption: nominated node node-007" in text
    events = _section(text, "Events:")
    assert events[0].split()[:5] == ["Time", "Type", "Reason", "Object", "Message"]
    assert len(events) == 2 + 10  # header, rule, 10 distinct events
    assert text.index("Related:") < text.index("Events:")


def test_pod_and_node() -> None:
    pod = describe(object_record(), "pod", "train-0-worker-1")
    assert "Where: node node-001" in pod
    related = _section(pod, "Related:")
    assert "PodClique (owner)  train-0-worker" in related
    assert "PodGang            train-0" in related
    node = describe(object_record(), "node", "node-001")
    assert "Pods:           1 running or starting (8/8 GPUs)" in node
    assert "train-0-worker-1" in node and "Ready:          True" in node


def test_unknown_kind_or_name() -> None:
    with pytest.raises(NotInRun, match="did you mean train-0-worker"):
        describe(object_record(), "podclique", "train-0-workr")
    with pytest.raises(LookupError, match="unknown resource type"):
        describe(object_record(), "widget", "x")


def test_a_name_in_two_namespaces_needs_the_namespace() -> None:
    """pretrain (and its gang pretrain-0) in team-a, running, and team-b, waiting: without a
    namespace describe refuses to pick one and names both; with one it shows that one's
    gang, pods and counts, none of the other's."""
    from phalanx.report.explain import Ambiguous

    from .synthetic import two_namespace_record

    rec = two_namespace_record()
    for kind, name in (("podgang", "pretrain-0"), ("pcs", "pretrain")):
        with pytest.raises(Ambiguous, match="2 namespaces \\(team-a, team-b\\)"):
            describe(rec, kind, name)
    b = describe(rec, "podgang", "pretrain-0", "team-b")
    assert "Namespace:     team-b" in b and "Phase:         Pending" in b
    assert "node-00" not in b  # team-a's pods are on node-000..003
    a = describe(rec, "pcs", "pretrain", "team-a")
    assert "Pods:           4/4 running" in a and "Gangs:          1/1 scheduled" in a
    b = describe(rec, "pcs", "pretrain", "team-b")
    assert "Pods:           0/4 running" in b
    # A pod's pointer to its gang names the namespace, as the gang's name repeats.
    pod = describe(rec, "pod", "pretrain-0-w-1", "team-b")
    assert "See the whole gang: phalanx describe podgang pretrain-0 -n team-b\n" in pod
