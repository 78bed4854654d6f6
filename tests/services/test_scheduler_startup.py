"""`phalanx scheduler`'s start-up loads only what the scheduler runs: not the operator (a
tenth of its import CPU), with the errors of a bad kubeconfig still one line."""

import subprocess
import sys

from phalanx.cli.errors import ExitCode

PROBE = """
import runpy, sys
sys.argv = ["phalanx", "scheduler", "--kubeconfig", sys.argv[1]]
try:
    runpy.run_module("phalanx.cli.main", run_name="__main__")
except SystemExit as e:
    code = e.code
loaded = [m for m in sys.modules if m == "phalanx.operator" or m.startswith("phalanx.operator.")]
print(code)
print(",".join(sorted(loaded)))
"""


def test_the_scheduler_command_does_not_import_the_operator(tmp_path):
    missing = tmp_path / "no-kubeconfig"
    done = subprocess.run([sys.executable, "-c", PROBE, str(missing)], capture_output=True,
                          text=True, timeout=120, check=True)
    code, operator_modules = (done.stdout.splitlines() + ["", ""])[:2]
    assert code == str(int(ExitCode.USAGE)), done.stdout + done.stderr
    assert f"kubeconfig {missing} does not exist" in done.stderr
    assert "Traceback" not in done.stderr
    assert operator_modules == ""
