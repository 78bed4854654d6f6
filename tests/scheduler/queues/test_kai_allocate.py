"""KAI's TestHandleAllocation (NVIDIA/KAI-Scheduler
pkg/scheduler/actions/allocate/allocate_test.go): its 23 scenario rows run on the embedded cluster
with Phalanx's scheduler (kai_scenario.py says how a row becomes a cluster and how KAI's job states
are compared), one case per row, ids = KAI's row names.

Rows that cannot be expressed here, and why:
- "Fraction job on MIG node": fractional GPUs (GPU sharing) are not modelled.
- "Do not allocate regular GPU task on dynamic MIG node": MIG or GPU-memory nodes are not modelled.
- "Allocate task according to nodespread - to the node with the most free GPUs": a custom KAI
  scheduler configuration.
"""

from __future__ import annotations

from typing import Any

import pytest

from .kai_cases import cases, run_and_check

TABLE = "ALLOCATE"
KNOWN_FAILURES: dict[str, str] = {}


@pytest.mark.parametrize("row", cases(TABLE, KNOWN_FAILURES))
def test_handle_allocation(row: dict[str, Any]) -> None:
    run_and_check(TABLE, row)
