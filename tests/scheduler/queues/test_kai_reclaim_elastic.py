"""KAI's TestHandleElasticReclaim (NVIDIA/KAI-Scheduler
pkg/scheduler/actions/reclaim/reclaim_elastic_test.go): its 11 scenario rows run on the embedded
cluster with Phalanx's scheduler (kai_scenario.py says how a row becomes a cluster and how KAI's
job states are compared), one case per row, ids = KAI's row names.

Rows that cannot be expressed here, and why:
- "Reclaim single task from elastic job": KAI subgroup sets are not modelled by this harness.
- "Reclaim several tasks from elastic job": KAI subgroup sets are not modelled by this harness.
- "Reclaim only over quota task from elastic Job": KAI subgroup sets are not modelled by this
  harness.
- "Reclaim all tasks from elastic job": KAI subgroup sets are not modelled by this harness.
- "Reclaim all tasks from job and a single task from elastic job": KAI subgroup sets are not
  modelled by this harness.
- "Reclaim tasks from several elastic jobs": KAI subgroup sets are not modelled by this harness.
- "Reclaim from several running jobs (and of them is elastic)": KAI subgroup sets are not modelled
  by this harness.
- "Elastic job reclaims another non-elastic job": KAI subgroup sets are not modelled by this
  harness.
- "Elastic job reclaims single task from another elastic job": KAI subgroup sets are not modelled
  by this harness.
- "Elastic job reclaims single task from another elastic job - equal queues": KAI subgroup sets are
  not modelled by this harness.
- "Don't reclaim elastic job which is in quota": KAI subgroup sets are not modelled by this
  harness.
"""

from __future__ import annotations

from typing import Any

import pytest

from .kai_cases import cases, run_and_check

TABLE = "RECLAIM_ELASTIC"
KNOWN_FAILURES: dict[str, str] = {}


@pytest.mark.parametrize("row", cases(TABLE, KNOWN_FAILURES))
def test_handle_elastic_reclaim(row: dict[str, Any]) -> None:
    run_and_check(TABLE, row)
