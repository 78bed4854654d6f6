"""The operator configuration `bench grove-scale` gives its stack (no server needed)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from phalanx.bench.grovescale.stack import (
    KUBE_SCHEDULER,
    PHALANX_SCHEDULER,
    ScaleStack,
    StackConfig,
)
from phalanx.cli.main import app


@pytest.mark.parametrize(("scheduler", "gate", "expected"), [
    (KUBE_SCHEDULER, True, {"default-scheduler": {"gangScheduling": True}}),
    (KUBE_SCHEDULER, False, {"default-scheduler": {"gangScheduling": True,
                                                   "podSchedulingGate": False}}),
    (PHALANX_SCHEDULER, False, {"default-scheduler": {"gangScheduling": True},
                                "phalanx-scheduler": {"podSchedulingGate": False}}),
])
def test_gate_free_goes_to_the_profile_of_the_scheduler_in_use(
        scheduler: str, gate: bool, expected: dict[str, dict[str, object]]) -> None:
    stack = ScaleStack(StackConfig(scheduler=scheduler, pod_scheduling_gate=gate))
    assert stack.operator_profile_configs() == expected


def test_the_cli_offers_the_gate_free_path() -> None:
    result = CliRunner().invoke(app, ["bench", "grove-scale", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--no-pod-scheduling-gate" in result.output
