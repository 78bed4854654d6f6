"""Run a script under callgrind with instrumentation on only between two marks it writes.

The script (run again with `--inner DIR`) writes DIR/start (its pid) when the window opens
and DIR/stop when it closes; it may wait for DIR/on and DIR/off, written once callgrind has
switched, so that no instruction of the window is missed. Used by callgrind_scheduler.py and
callgrind_e2e.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    while not path.exists():
        if proc.poll() is not None:
            sys.exit(f"the benchmark ended before {path.name}: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.2)


def count_window(script: str, args: list[str]) -> tuple[int, dict[str, Any]]:
    """The instructions executed between the marks, and the JSON the script printed last."""
    with tempfile.TemporaryDirectory() as tmp:
        marks, out = Path(tmp), Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
               sys.executable, script, *args, "--inner", tmp]
        env = os.environ | {"PYTHONHASHSEED": "0"}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for(marks / "start", proc)
        pid = (marks / "start").read_text()
        subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
        (marks / "on").write_text("")
        _wait_for(marks / "stop", proc)
        subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
        (marks / "off").write_text("")
        stdout, _ = proc.communicate()
        totals = re.search(r"^totals:\s*(\d+)", out.read_text(), re.MULTILINE)
        if proc.returncode or totals is None:
            sys.exit(f"callgrind run failed (exit {proc.returncode})")
        return int(totals.group(1)), json.loads(stdout.strip().splitlines()[-1])
