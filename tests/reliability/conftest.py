"""Reliability tests: faults, restarts, lost nodes and fuzzed input on the whole stack.

Each test records what it survived (faults injected, restarts, inputs tried) with
`report(...)`; the counts are printed at once (visible with `pytest -s`), stored as
junit properties, and repeated in a "reliability counts" section of the terminal summary.

Scale (defaults keep the directory around two minutes on two cores):
    PHALANX_RELIABILITY_GANGS=1000      gangs in the fault-injection test
    PHALANX_RELIABILITY_RESTARTS=12     kill/restart cycles in the restart test
    PHALANX_RELIABILITY_EXAMPLES=60     hypothesis examples per fuzz target
    PHALANX_RELIABILITY_EXPLORE=1       new random fuzz examples on each run (default: fixed)
    PHALANX_RELIABILITY_SEED=7          seed of the fault rates, workloads and kills
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

_COUNTS: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture
def report(request: pytest.FixtureRequest,
           record_property: Callable[[str, Any], None]) -> Callable[..., None]:
    """`report(faults_injected=..., restarts=...)`: print, store and summarise counts."""

    def _report(**counts: Any) -> None:
        name = request.node.name
        for key, value in counts.items():
            record_property(key, value)
        _COUNTS.append((name, counts))
        print(f"\n[reliability] {name}: " + ", ".join(f"{k.replace('_', ' ')}={v}"
                                                     for k, v in counts.items()))

    return _report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _COUNTS:
        return
    terminalreporter.section("reliability counts")
    for name, counts in _COUNTS:
        terminalreporter.write_line(f"{name}: " + ", ".join(
            f"{k.replace('_', ' ')}={v}" for k, v in counts.items()))
