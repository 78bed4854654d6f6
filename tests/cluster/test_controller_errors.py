"""How a controller treats a failing reconcile (issue 15 item 5, issue 12): permanent errors
are reported once and logged one line per retry; tracebacks only for bugs, once."""

from __future__ import annotations

import asyncio
import logging

import pytest

from phalanx.cluster.client import Forbidden, Invalid, ServerError
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.controller import Controller, Manager, PermanentError, permanent_reason
from phalanx.cluster.memory import MemoryCluster

from .kinds import Widget, widget


class Recorder:
    def __init__(self) -> None:
        self.reports: list[tuple[str, str, str]] = []
        self.clears: list[str] = []

    async def report(self, key: str, reason: str, message: str) -> None:
        self.reports.append((key, reason, message))

    async def clear(self, key: str) -> None:
        self.clears.append(key)


def _run(failures: list[BaseException], reporter: Recorder | None = None,
         horizon: float = 600.0) -> tuple[Controller, list[float]]:
    async def main() -> tuple[Controller, list[float]]:
        c = MemoryCluster()
        mgr = Manager(c)
        loop = asyncio.get_running_loop()
        attempts: list[float] = []
        queue = list(failures)

        async def reconcile(key: str) -> None:
            attempts.append(loop.time())
            if queue:
                raise queue.pop(0)

        ctrl = mgr.add(Controller("things", reconcile, reporter=reporter))
        ctrl.watch(mgr.informer(Widget))
        await mgr.start()
        await c.create(widget("a"))
        await mgr.wait_idle(until=loop.time() + horizon, timeout=horizon * 2)
        await mgr.stop()
        return ctrl, attempts

    return run_virtual(main)


def _failure_logs(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "phalanx.cluster.controller"]


def test_a_permanent_error_is_reported_once_and_logged_one_line_per_retry(
        caplog: pytest.LogCaptureFixture) -> None:
    rec = Recorder()
    bad = Invalid('Pod "a-0" is invalid: spec.containers[0].resources.limits: Required value',
                  kind="Pod", name="a-0", field="spec.containers[0].resources.limits")
    with caplog.at_level(logging.INFO):
        ctrl, attempts = _run([bad] * 6, rec)
    assert len(attempts) == 7  # six failures, then the fix arrived and it succeeded
    assert rec.reports == [("default/a", "Invalid", bad.message)]
    assert rec.clears == ["default/a"]
    logs = _failure_logs(caplog)
    assert len(logs) == 6 and not any(r.exc_info for r in logs)
    assert all("Invalid" in r.getMessage() and "attempt" in r.getMessage() for r in logs)
    gaps = [round(b - a, 3) for a, b in zip(attempts, attempts[1:])]
    assert gaps == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]  # not the 5 ms base backoff
    assert ctrl.permanent_errors == 6


def test_a_changed_permanent_error_is_reported_again() -> None:
    rec = Recorder()
    _run([Forbidden("quota exceeded"), Forbidden("quota exceeded"),
          PermanentError("UnknownBackend", "scheduler 'x' is not enabled")], rec)
    assert [r[1] for r in rec.reports] == ["Forbidden", "UnknownBackend"]


def test_a_bug_logs_its_traceback_once_then_one_line_per_retry(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        _run([RuntimeError("a bug")] * 4)
    logs = _failure_logs(caplog)
    assert len(logs) == 4
    assert [bool(r.exc_info) for r in logs] == [True, False, False, False]


def test_transient_api_errors_log_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    rec = Recorder()
    with caplog.at_level(logging.INFO):
        ctrl, attempts = _run([ServerError("etcd leader changed")] * 3, rec)
    logs = _failure_logs(caplog)
    assert len(logs) == 3 and not any(r.exc_info for r in logs)
    assert rec.reports == []  # a transient error is not the object's fault
    assert [round(b - a, 3) for a, b in zip(attempts, attempts[1:])] == [0.005, 0.01, 0.02]


def test_permanent_reasons() -> None:
    class ConfigProblem(ValueError):
        permanent_reason = "InvalidConfiguration"

    assert permanent_reason(Invalid("x")) == "Invalid"
    assert permanent_reason(Forbidden("x")) == "Forbidden"
    assert permanent_reason(ConfigProblem("x")) == "InvalidConfiguration"
    assert permanent_reason(PermanentError("InvalidSpec", "x")) == "InvalidSpec"
    assert permanent_reason(ServerError("x")) is None
    assert permanent_reason(RuntimeError("x")) is None


def test_a_lost_race_is_routine(caplog: pytest.LogCaptureFixture) -> None:
    from phalanx.cluster.client import Conflict

    with caplog.at_level(logging.INFO):
        ctrl, attempts = _run([Conflict("the object has been modified")] * 2)
    assert len(attempts) == 3 and _failure_logs(caplog) == []
