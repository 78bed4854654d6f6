"""The harness's audit log: kube-apiserver is told never to rotate it (readers keep byte
offsets into it), and a log shorter than a reader's offset is an error, not "no writes"."""

from __future__ import annotations

import json

import pytest

from phalanx.envtest.audit import AUDIT_LOG_MAX_MB, audit_args, completed_records


def _line(verb: str, stage: str = "ResponseComplete") -> str:
    return json.dumps({"stage": stage, "verb": verb, "user": {"username": "u"},
                       "requestReceivedTimestamp": "2026-01-01T00:00:00.000000Z"})


def test_the_api_server_is_told_not_to_rotate_the_log(tmp_path):
    args, log = audit_args(tmp_path)
    assert f"--audit-log-maxsize={AUDIT_LOG_MAX_MB}" in args and AUDIT_LOG_MAX_MB >= 10**6
    assert f"--audit-log-path={log}" in args


def test_records_after_an_offset_and_a_log_that_shrank(tmp_path):
    log = tmp_path / "audit.log"
    log.write_text(_line("create") + "\n")
    offset = log.stat().st_size
    with log.open("a") as f:
        f.write(_line("patch") + "\n" + _line("update", stage="RequestReceived") + "\n"
                + '{"stage": "ResponseComp')  # a line still being written
    assert [r["verb"] for r in completed_records(log, offset)] == ["patch"]
    log.write_text(_line("delete") + "\n")  # replaced by a shorter file
    with pytest.raises(RuntimeError, match="rotated or truncated"):
        completed_records(log, offset + 100)
