import pytest

from phalanx.report.explain import NotInRun, explain_pod, explain_podgang

from .synthetic import synthetic_record


def test_scheduled_gang_says_where_and_that_the_pack_constraint_holds() -> None:
    text = explain_podgang(synthetic_record(), "train-2")
    assert "all 4 pods were bound together 1m59s after the gang was created" in text
    assert "node-[008-011]" in text
    assert "rack: rack-2 (one rack)" in text
    assert "required rack constraint holds" in text


def test_pending_gang_gives_the_scheduler_reason_and_its_events() -> None:
    text = explain_podgang(synthetic_record(), "big-0")
    assert "Why it waits (9m30s so far)" in text
    assert "every rack has at most 4 free nodes" in text
    assert "FailedScheduling" in text and "(x12)" in text


def test_pod_explanations_point_at_node_domains_and_gang() -> None:
    rec = synthetic_record()
    running = explain_pod(rec, "train-0-worker-1")
    assert "Where: node node-001" in running and "rack: rack-0" in running
    assert "phalanx explain podgang train-0" in running
    pending = explain_pod(rec, "big-0-w-3")
    assert "Why it is not scheduled" in pending and "every rack has at most 4" in pending


def test_unknown_names_suggest_close_matches() -> None:
    with pytest.raises(NotInRun, match="did you mean train-2"):
        explain_podgang(synthetic_record(), "train-2x")
    with pytest.raises(NotInRun, match="no pod named"):
        explain_pod(synthetic_record(), "nope")
