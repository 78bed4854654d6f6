"""Running an example through the CLI as a user would, once per test session."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path

from phalanx.sim.record import RunRecord, load_record

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
RACK = "topology.phalanx.dev/rack"


@cache
def run_example(name: str, tmp: str) -> tuple[subprocess.CompletedProcess[str], RunRecord, Path]:
    """`phalanx run examples/NAME.yaml --save run.json --report report.html -o json`."""
    out = Path(tmp) / name
    out.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        [sys.executable, "-m", "phalanx.cli.main", "run", str(EXAMPLES / f"{name}.yaml"),
         "--save", "run.json", "--report", "report.html", "-o", "json"],
        cwd=out, capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return r, load_record(out / "run.json"), out


def examples_tmp(tmp_path_factory) -> str:  # type: ignore[no-untyped-def]
    return str(tmp_path_factory.getbasetemp() / "examples")


def racks_of(record: RunRecord, gang: str) -> set[str]:
    g = record.gang(gang)
    assert g is not None, f"no gang {gang}"
    return {record.node(n).labels[RACK] for n in g.nodes}
