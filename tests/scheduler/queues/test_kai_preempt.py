"""KAI's TestHandlePreempt (NVIDIA/KAI-Scheduler pkg/scheduler/actions/preempt/preempt_test.go):
its 13 scenario rows run on the embedded cluster with Phalanx's scheduler (kai_scenario.py says how
a row becomes a cluster and how KAI's job states are compared), one case per row, ids = KAI's row
names.

Rows that cannot be expressed here, and why:
- "3 train job running, 1 build job pending for the same queue - no need to preempt both":
  fractional GPUs (GPU sharing) are not modelled.
"""

from __future__ import annotations

from typing import Any

import pytest

from .kai_cases import cases, run_and_check

TABLE = "PREEMPT"
KNOWN_FAILURES: dict[str, str] = {}


@pytest.mark.parametrize("row", cases(TABLE, KNOWN_FAILURES))
def test_handle_preempt(row: dict[str, Any]) -> None:
    run_and_check(TABLE, row)
