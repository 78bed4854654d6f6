"""`phalanx explain` on a saved run (a hand-built one: no simulation needed)."""

import subprocess
import sys
from pathlib import Path

from phalanx.sim.record import save_record

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from report.synthetic import synthetic_record  # noqa: E402


def phalanx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phalanx.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_explain_reads_the_default_saved_run(tmp_path: Path) -> None:
    save_record(synthetic_record(), tmp_path / ".phalanx" / "last-run.json")
    r = phalanx("explain", "podgang", "big-0", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Why it waits" in r.stdout and "every rack has at most 4 free nodes" in r.stdout
    r = phalanx("explain", "pod", "train-1-worker-2", cwd=tmp_path)
    assert r.returncode == 0 and "Where: node node-006" in r.stdout


def test_explain_other_run_file_and_unknown_names(tmp_path: Path) -> None:
    save_record(synthetic_record(), tmp_path / "run.json")
    r = phalanx("explain", "podgang", "train-7", "--run", "run.json", cwd=tmp_path)
    assert r.returncode == 2
    assert "no podgang named 'train-7'" in r.stderr and "did you mean" in r.stderr


def test_explain_without_a_saved_run_says_how_to_get_one(tmp_path: Path) -> None:
    r = phalanx("explain", "podgang", "x", cwd=tmp_path)
    assert r.returncode == 2
    assert "no saved run at .phalanx/last-run.json" in r.stderr
    assert "phalanx run" in r.stderr
    (tmp_path / "bad.json").write_text("{not json")
    r = phalanx("explain", "pod", "x", "--run", "bad.json", cwd=tmp_path)
    assert r.returncode == 2 and "bad.json is not a saved run" in r.stderr
