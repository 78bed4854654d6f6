"""`phalanx describe` / `explain` / `get` / `diff` / `export` through the CLI, on saved runs
(hand-built ones: no simulation needed)."""

import json
import subprocess
import sys
from pathlib import Path

from phalanx.sim.record import save_record

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from report.objects import object_record  # noqa: E402
from report.synthetic import synthetic_record  # noqa: E402
from sim.workloads import pcs  # noqa: E402


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


def test_describe_every_kind_and_explain_is_its_alias(tmp_path: Path) -> None:
    save_record(object_record(), tmp_path / "run.json")
    for kind, name in (("pcs", "train"), ("podclique", "train-0-worker"),
                       ("pcsg", "train-0-model"), ("pg", "big-0"), ("pod", "big-0-w-0"),
                       ("node", "node-000")):
        r = phalanx("describe", kind, name, "--run", "run.json", cwd=tmp_path)
        assert r.returncode == 0, (kind, r.stderr)
        assert r.stdout.startswith(f"Name:          {name}\n") and "Events:" in r.stdout
    # One command under two names: one kind shows it (each call is a process start).
    alias = phalanx("explain", "pg", "big-0", "--run", "run.json", cwd=tmp_path)
    described = phalanx("describe", "pg", "big-0", "--run", "run.json", cwd=tmp_path)
    assert alias.stdout == described.stdout and alias.stdout


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


def test_get_flags_as_kubectl_takes_them(tmp_path: Path) -> None:
    save_record(object_record(), tmp_path / "run.json")
    r = phalanx("get", "pods,pg", "-A", "-L", "grove.io/podgang", "--show-labels", "-o", "wide",
                "--at", "1m30s", "--run", "run.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[0].split()
    assert head[0] == "NAMESPACE" and head[-2:] == ["PODGANG", "LABELS"]
    row = next(x.split() for x in r.stdout.splitlines() if "grove.io/big-0" in x)
    assert row[1:3] == ["podgang.scheduler.grove.io/big-0", "Running"]  # as it was at 1m30s
    r = phalanx("get", "pods", "-o", "name", "-n", "team-a", "--run", "run.json", cwd=tmp_path)
    assert r.stdout == "pod/other-0\n"
    r = phalanx("get", "pods", "-o", "xml", "--run", "run.json", cwd=tmp_path)
    assert r.returncode == 2 and "xml" in r.stderr


def test_diff_two_saved_runs(tmp_path: Path) -> None:
    a, b = synthetic_record(), synthetic_record()
    b.gangs = [g for g in b.gangs if g.name != "big-0"]
    save_record(a, tmp_path / "a.json")
    save_record(b, tmp_path / "b.json")
    r = phalanx("diff", "a.json", "b.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "big-0" in r.stdout and "only in A" in r.stdout
    data = json.loads(phalanx("diff", "a.json", "b.json", "-o", "json", cwd=tmp_path).stdout)
    assert data["gangs"] == [{"podgang": "big-0", "what": "only in A", "a": "Pending",
                              "b": "-"}]


def test_export_prints_a_workload_for_kubectl_apply(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(pcs("job"))
    r = phalanx("export", "w.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\n")
    assert "sim.phalanx.dev" not in r.stdout and "annotation(s)" in r.stderr
