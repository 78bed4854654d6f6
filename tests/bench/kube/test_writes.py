"""The scheduler's own writes from the audit log (writes.py): whose, when the last ended, and
what trailed the last bind."""

import json
from datetime import UTC, datetime

from phalanx.bench.kube.writes import log_size, summarize_writes, writes_since

USER = "system:serviceaccount:default:bench-phalanx-scheduler"
T0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(T0 + seconds, UTC).isoformat().replace("+00:00", "Z")


def _line(user, verb, resource, received, done, *, stage="ResponseComplete", group="",
          sub="", code=201):
    return json.dumps({
        "stage": stage, "verb": verb, "user": {"username": user},
        "objectRef": {"resource": resource, "subresource": sub, "apiGroup": group,
                      "namespace": "ns", "name": "x"},
        "responseStatus": {"code": code},
        "requestReceivedTimestamp": _stamp(received), "stageTimestamp": _stamp(done)})


def test_only_this_users_completed_writes_after_the_offset(tmp_path):
    log = tmp_path / "audit.log"
    log.write_text(_line(USER, "create", "pods", 0.1, 0.2, sub="binding") + "\n")
    offset = log_size(log)
    log.write_text(log.read_text() + "\n".join([
        _line(USER, "create", "pods", 1.0, 1.01, sub="binding"),
        _line("system:serviceaccount:default:bench-kube-scheduler", "create", "pods", 1, 1.1),
        _line(USER, "create", "events", 1.5, 1.52, stage="ResponseStarted"),
        _line(USER, "create", "events", 2.0, 2.25, group="events.k8s.io"),
        '{"stage": "ResponseCo',  # a line still being written
    ]) + "\n")
    got = writes_since(log, offset, USER)
    assert [w.call for w in got] == ["create pods/binding", "create events.k8s.io/events"]
    assert abs(got[1].done - (T0 + 2.25)) < 1e-6 and abs(got[1].received - (T0 + 2.0)) < 1e-6
    assert writes_since(tmp_path / "missing.log", 0, USER) == []
    assert log_size(tmp_path / "missing.log") == 0 and log_size(None) == 0


def test_last_write_and_what_trails_the_last_bind(tmp_path):
    log = tmp_path / "audit.log"
    log.write_text("\n".join([
        _line(USER, "create", "pods", 1.0, 1.01, sub="binding"),
        _line(USER, "create", "pods", 3.0, 3.02, sub="binding"),
        _line(USER, "create", "events", 2.5, 2.6),
        _line(USER, "create", "events", 3.5, 3.6),
        _line(USER, "patch", "events", 7.0, 7.5),
    ]) + "\n")
    s = summarize_writes(writes_since(log, 0, USER), T0, T0 + 3.05)  # last bind seen at 3.05
    assert s["writes"] == 5 and s["last_write_seconds"] == 7.5
    assert s["writes_after_last_bind"] == 2
    assert s["writes_after_last_bind_by_call"] == {"create events": 1, "patch events": 1}
    assert s["writes_trail_last_bind_seconds"] == 4.45
    assert s["last_write_seconds_by_call"] == {"patch events": 7.5, "create events": 3.6,
                                               "create pods/binding": 3.02}
    assert s["writes_by_call"] == {"create events": 2, "create pods/binding": 2,
                                   "patch events": 1}


def test_no_writes_end_at_t0():
    s = summarize_writes([], T0, T0 + 3)
    assert s["writes"] == 0 and s["last_write_seconds"] == 0.0
    assert s["writes_trail_last_bind_seconds"] == 0.0
