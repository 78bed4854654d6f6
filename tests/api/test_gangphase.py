"""A PodGang's phase from its pods (phalanx/api/gangphase.py): the one rule behind the
operator's status.phase and what `phalanx run`, `get` and `describe` show (issue 25 item 2)."""

import pytest

from phalanx.api.gangphase import PodState, podgang_phase

RUNNING = PodState("Running", True, True)
STARTING = PodState("Running", True, False)
PENDING = PodState("Pending", False, False)
DONE = PodState("Succeeded", True, False)
FAILED = PodState("Failed", True, False)


@pytest.mark.parametrize(("groups", "phase"), [
    ([], "Pending"),
    ([(2, [PENDING, PENDING])], "Pending"),
    ([(2, [RUNNING, PENDING])], "Pending"),
    ([(2, [RUNNING, FAILED, PENDING])], "Pending"),  # a failed pod does not hold a place
    ([(2, [STARTING, RUNNING])], "Starting"),
    ([(2, [RUNNING, RUNNING]), (1, [STARTING])], "Starting"),
    ([(2, [RUNNING, RUNNING, PENDING])], "Running"),  # minReplicas, not every pod
    ([(2, [RUNNING, DONE])], "Running"),  # a finished pod has done its part
    ([(2, [DONE, DONE]), (1, [DONE])], "Succeeded"),
    ([(2, [DONE, FAILED])], "Failed"),
    ([(2, [DONE, DONE, FAILED])], "Succeeded"),  # minReplicas succeeded
    ([(2, [DONE, DONE]), (1, [FAILED])], "Failed"),
])
def test_phase(groups, phase) -> None:
    assert podgang_phase(groups) == phase
