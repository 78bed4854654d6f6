import re

import pytest

from phalanx.report.explain import NotInRun, explain_pod, explain_podgang
from phalanx.report.summary import summarize

from .objects import object_record
from .synthetic import synthetic_record


def test_scheduled_gang_says_where_and_that_the_pack_constraint_holds() -> None:
    text = explain_podgang(synthetic_record(), "train-2")
    assert "all 4 pods were bound together 1m59s after the gang was created" in text
    assert "node-[008-011]" in text
    assert "rack: rack-2 (one rack)" in text
    assert "required rack constraint holds" in text


def test_pending_gang_gives_the_scheduler_reason_and_its_events() -> None:
    text = explain_podgang(synthetic_record(), "big-0")
    assert "Why it waits (9m30s so far, since it was created)" in text
    assert "every rack has at most 4 free nodes" in text
    assert "FailedScheduling" in text and "(x12)" in text


def test_no_event_is_left_out() -> None:
    """Nine events on big-0's pods: the earliest, the FailedScheduling that explains the
    wait, is listed too (it was cut at 6 per gang; issue 25 item 4)."""
    text = explain_podgang(object_record(), "big-0")
    assert "preemption: nominated node node-007" in text
    assert all(f"note {k}" in text for k in range(8))


def test_event_columns_are_aligned() -> None:
    text = explain_podgang(object_record(), "big-0")
    lines = text[text.index("Events:"):].splitlines()[1:]
    header = lines[0]
    starts = [header.index(c) for c in ("Type", "Reason", "Object", "Message")]
    for line in lines[2:]:
        for start in starts:
            assert line[start - 2:start] == "  " and line[start] != " ", (line, start)


def test_the_wait_is_the_same_as_the_run_summary_says() -> None:
    """A preempted gang: `run` and `explain` both count from its preemption."""
    rec = synthetic_record()
    waiting = next(p for p in summarize(rec).pending if p.name == "scavenger-0").waiting_for
    text = explain_podgang(rec, "scavenger-0")
    assert waiting == 481.0
    assert "Why it waits (8m1s so far, since it was preempted at 1m59s)" in text


def test_one_reason_then_the_details() -> None:
    rec = synthetic_record()
    g = rec.gang("big-0")
    g.reasons = ["Scheduled: big-0-w: 0/8 scheduled", "GangScheduled: member 3 ..."]
    text = explain_podgang(rec, "big-0")
    why = text[text.index("Why it waits"):].splitlines()
    assert why[1].strip() == g.explanation
    assert why[2].strip() == "Details:"
    assert [w.strip() for w in why[3:5]] == [f"- {r}" for r in g.reasons]


def test_pod_explanations_point_at_node_domains_and_gang() -> None:
    rec = synthetic_record()
    running = explain_pod(rec, "train-0-worker-1")
    assert "Where: node node-001" in running and "rack: rack-0" in running
    assert "phalanx describe podgang train-0" in running
    pending = explain_pod(rec, "big-0-w-3")
    assert "Why it is not scheduled" in pending and "every rack has at most 4" in pending


def test_unknown_names_suggest_close_matches() -> None:
    with pytest.raises(NotInRun, match="did you mean train-2"):
        explain_podgang(synthetic_record(), "train-2x")
    with pytest.raises(NotInRun, match="no pod named"):
        explain_pod(synthetic_record(), "nope")


def test_conditions_are_a_table() -> None:
    text = explain_podgang(object_record(), "big-0")
    block = text[text.index("Conditions:"):].splitlines()
    assert re.match(r"\s+Type\s+Status\s+Reason\s+Message", block[1])
    assert re.match(r"\s+Scheduled\s+False\s+PodsUnscheduled", block[4])
