"""KAI's TestAllocateIntegrationTest (NVIDIA/KAI-Scheduler
pkg/scheduler/actions/integration_tests/allocate/allocate_test.go): its 18 scenario rows run on the
embedded cluster with Phalanx's scheduler (kai_scenario.py says how a row becomes a cluster and how
KAI's job states are compared), one case per row, ids = KAI's row names.

Every row is ported.
"""

from __future__ import annotations

from typing import Any

import pytest

from .kai_cases import cases, run_and_check

TABLE = "INTEGRATION_ALLOCATE"
KNOWN_FAILURES: dict[str, str] = {}


@pytest.mark.parametrize("row", cases(TABLE, KNOWN_FAILURES))
def test_allocate_integration_test(row: dict[str, Any]) -> None:
    run_and_check(TABLE, row)
