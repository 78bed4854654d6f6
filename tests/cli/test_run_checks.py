"""`phalanx run` before and after the simulation (issue 25 items 7, 8, 10, 13, 14): the size
of the work checked up front, output paths checked before the run, every exit code distinct
and documented, and `--dry-run`."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sim.workloads import pcs  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def phalanx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phalanx.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _nothing_written(cwd: Path) -> None:
    assert not (cwd / ".phalanx").exists() and not list(cwd.glob("*.html"))


def test_a_binary_file_is_named_not_an_internal_error(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_bytes(b"\x7fELF\x02\x01\x01\x00\xd0\xff\x00")
    r = phalanx("run", "w.yaml", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("error: w.yaml: not a text file: byte 0xd0 at offset 8")
    assert "internal error" not in r.stderr


@pytest.mark.parametrize(("flag", "path", "why"), [
    ("--report", "afile/r.html", "cannot write afile/r.html: afile is a file, not a directory"),
    ("--save", "/proc/r.json", "cannot write /proc/r.json: cannot create a file in /proc"),
    ("--report", ".", "--report: . is a directory"),
])
def test_output_paths_are_checked_before_the_run(tmp_path: Path, flag: str, path: str,
                                                 why: str) -> None:
    (tmp_path / "afile").write_text("")
    (tmp_path / "w.yaml").write_text(pcs())
    r = phalanx("run", "w.yaml", flag, path, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert why in r.stderr and "internal error" not in r.stderr and ".tmp" not in r.stderr
    assert r.stdout == ""  # refused before anything ran
    _nothing_written(tmp_path)


def test_an_absurd_workload_is_refused_up_front_with_the_numbers(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(pcs(replicas=1_000_000, pods=2, gpus=8))
    r = phalanx("run", "w.yaml", cwd=tmp_path)
    assert r.returncode == 6, r.stderr
    err = " ".join(r.stderr.split())
    assert ("1 PodCliqueSet(s) with 1,000,000 replicas make 2,000,000 pods (4,000,001 "
            "objects) asking for 16,000,000 GPUs; the cluster has 512") in err
    assert "simulating them takes about" in err and "more than --max-pods 50,000" in err
    assert "--max-pods 0" in err
    _nothing_written(tmp_path)


def test_a_huge_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text("---\n".join(pcs(f"p{i}") for i in range(30)))
    r = phalanx("run", "w.yaml", "--max-pods", "20", cwd=tmp_path)
    assert r.returncode == 6, r.stderr
    assert "the workload files hold 30 YAML documents" in " ".join(r.stderr.split())


def test_dry_run_and_validate_check_admission_without_running(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(pcs("ok") + "---\n" + pcs("kai", scheduler="kai-scheduler")
                                     + "---\n" + pcs("vol", scheduler="volcano"))
    cfg = str(REPO / "examples" / "operator-config.yaml")
    for args in (("run", "w.yaml", "--dry-run", "-c", cfg), ("validate", "w.yaml", "-c", cfg)):
        r = phalanx(*args, cwd=tmp_path)
        assert r.returncode == 3, r.stderr
        assert "PodCliqueSet ok: valid" in r.stdout
        assert "admission rejected 2 objects:" in r.stderr
        assert "PodCliqueSet kai:" in r.stderr and "PodCliqueSet vol:" in r.stderr
        _nothing_written(tmp_path)
    (tmp_path / "v.yaml").write_text(pcs("ok") + "---\n" + pcs("vol", scheduler="volcano"))
    r = phalanx("validate", "v.yaml", cwd=tmp_path)  # every backend enabled by default
    assert r.returncode == 0, r.stderr
    assert "3 object(s) valid; nothing was run." in r.stdout  # with the ClusterTopology


def test_help_documents_every_exit_code_and_shows_no_bool_metavar(tmp_path: Path) -> None:
    from phalanx.cli.errors import ExitCode

    for args in (("--help",), ("run", "--help")):
        text = " ".join(phalanx(*args, cwd=tmp_path).stdout.split())
        assert "Exit codes:" in text
        for code in ExitCode:
            assert f" {int(code)} " in text, code
        assert "<bool>" not in text
    codes = [int(c) for c in ExitCode]
    assert len(codes) == len(set(codes))
    run_help = phalanx("run", "--help", cwd=tmp_path).stdout
    assert re.search(r"--config\s+-c\s", run_help)  # -c is --config, as everywhere else
    assert not re.search(r"--cluster\s+-c", run_help)
    get_help = phalanx("get", "--help", cwd=tmp_path).stdout
    assert "<table|wide|yaml|json|n" in get_help.replace(" ", "")  # -o lists its choices
