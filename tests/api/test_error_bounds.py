"""phalanx.api.errors.bounded_message: what a condition message, lastErrors entry, Event or
log line may carry of an error (issue 22 item 3)."""

from __future__ import annotations

import json

from phalanx.api.errors import MAX_CAUSE_CHARS, bounded_message, short_cause, strip_values
from phalanx.cluster.client import Invalid


def test_echoed_values_are_left_out_and_the_cause_kept() -> None:
    patch = json.dumps({"status": {"conditions": [{"message": "previous report " * 3000}]}})
    text = (f'PodClique.grove.io "a" is invalid: [<nil>: Invalid value: {json.dumps(patch)}: '
            'strict decoding error: unknown field "status.lastScheduled"]')
    out = bounded_message(text)
    assert out == ('PodClique.grove.io "a" is invalid: [<nil>: Invalid value: (value not shown): '
                   'strict decoding error: unknown field "status.lastScheduled"]')
    assert bounded_message(out) == out  # stripping twice changes nothing


def test_go_maps_objects_and_bare_values() -> None:
    assert strip_values('spec.x: Invalid value: map[string]interface {}{"a":"b]"}: nope') == \
        "spec.x: Invalid value: (value not shown): nope"
    assert strip_values("spec.x: Unsupported value: 3: supported values: a, b") == \
        "spec.x: Unsupported value: (value not shown): supported values: a, b"
    assert strip_values("spec.x: Too long: may not be more than 32768 bytes") == \
        "spec.x: Too long: may not be more than 32768 bytes"


def test_a_cause_repeated_100_times_is_said_once() -> None:
    text = "x is invalid: [" + ", ".join(['spec.a: Invalid value: "q": bad'] * 100) + "]"
    assert bounded_message(text) == "x is invalid: [spec.a: Invalid value: (value not shown): " \
                                    "bad (x100)]"


def test_long_messages_are_cut_and_say_how_much() -> None:
    out = bounded_message("why " * 5000)
    assert len(out) <= MAX_CAUSE_CHARS and out.endswith("more characters)")
    assert "\n" not in bounded_message("a\nb\n  c")


def test_short_cause_of_an_api_error() -> None:
    err = Invalid('x: Invalid value: "' + "y" * 10_000 + '": bad', field="x")
    assert short_cause(err) == "x: Invalid value: (value not shown): bad"
    assert short_cause(RuntimeError()) == "RuntimeError"
