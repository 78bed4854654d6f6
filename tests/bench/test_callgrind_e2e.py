"""bench/callgrind_e2e.py: the e2e window under callgrind opens at the bench's counter reset and
closes when its tracker stops, with every pod Running in between."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "callgrind_e2e.py"


@pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("callgrind_control") is None,
                    reason="valgrind is not installed")
def test_counts_the_instructions_of_a_completed_run():
    done = subprocess.run([sys.executable, str(SCRIPT), "--nodes", "20", "--pods", "16"],
                          check=True, capture_output=True, text=True, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["completed"] is True
    assert result["pods"] == 16 and result["gated"] is False
    # Two PodCliqueSets of 8 pods: at least a create and a bind per pod inside the window.
    assert result["api_writes"] >= 2 * 16
    assert result["instructions"] > 0
