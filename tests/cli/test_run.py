"""`phalanx run` bad input, as a user meets it: one clear line, a non-zero exit code, and
nothing written (no saved run, no report). Full runs of the examples: tests/examples."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def phalanx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phalanx.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _assert_nothing_written(cwd: Path) -> None:
    assert not (cwd / ".phalanx").exists()
    assert not (cwd / "report.html").exists()


def test_missing_file(tmp_path: Path) -> None:
    r = phalanx("run", "nope.yaml", "--report", "report.html", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip() == "error: no such file: nope.yaml"
    _assert_nothing_written(tmp_path)


@pytest.mark.parametrize(("text", "message"), [
    ("apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: x\n",
     "malformed YAML at line"),
    ("apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: x}\nspec:\n"
     "  replicas: 1\n  template:\n    cliques:\n    - name: a\n      spec:\n"
     "        replicaz: 2\n        podSpec: {containers: [{name: c}]}\n",
     "replicaz"),
    ("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: x}\n", "Widget"),
])
def test_bad_yaml_or_object_names_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "w.yaml").write_text(text)
    r = phalanx("run", "w.yaml", "--report", "report.html", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("error: w.yaml")
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    _assert_nothing_written(tmp_path)


def test_bad_flags_are_usage_errors(tmp_path: Path) -> None:
    example = str(REPO / "examples" / "training-rack.yaml")
    r = phalanx("run", example, "--until", "soonish", cwd=tmp_path)
    assert r.returncode == 2 and "--until: invalid duration 'soonish'" in r.stderr
    r = phalanx("run", example, "--output", "xml", cwd=tmp_path)
    assert r.returncode == 2 and "xml" in r.stderr
    (tmp_path / "c.yaml").write_text("apiVersion: sim.phalanx.dev/v1alpha1\nkind: ClusterSpec\n"
                                     "metadata: {name: c}\nspec: {nodePools: []}\n")
    r = phalanx("run", example, "--cluster", "c.yaml", cwd=tmp_path)
    assert r.returncode == 1 and "c.yaml" in r.stderr and "nodePools" in r.stderr
    _assert_nothing_written(tmp_path)


def test_bad_operator_config_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text(
        "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
        "scheduler:\n  profiles:\n  - name: kai-schedular\n")
    r = phalanx("run", str(REPO / "examples" / "training-rack.yaml"), "--config", "cfg.yaml",
                "--report", "report.html", cwd=tmp_path)
    assert r.returncode == 1
    assert "scheduler.profiles[0].name" in r.stderr and "kai-scheduler" in r.stderr
    _assert_nothing_written(tmp_path)


def test_a_pod_template_a_real_api_server_would_reject_is_refused_up_front(
        tmp_path: Path) -> None:
    text = (REPO / "examples" / "training-rack.yaml").read_text()
    bad = text.replace("limits: {nvidia.com/gpu: \"8\"}", "limits: {nvidia.com/gpu: \"4\"}")
    assert bad != text
    (tmp_path / "w.yaml").write_text(bad)
    r = phalanx("run", "w.yaml", "--report", "report.html", cwd=tmp_path)
    assert r.returncode == 3, r.stderr  # the run failed: admission rejected the object
    assert ("spec.template.cliques[0].spec.podSpec.containers[0].resources.requests: Invalid "
            "value: 8: must be equal to nvidia.com/gpu limit of 4") in r.stderr
    assert "Traceback" not in r.stderr
    _assert_nothing_written(tmp_path)


def test_a_refused_field_is_printed_with_its_brackets(tmp_path: Path) -> None:
    """Field paths such as metadata.labels[kai.scheduler/queue] are text, not console markup
    (rich dropped the bracketed key)."""
    f = tmp_path / "pcs.yaml"
    f.write_text(
        "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\n"
        "metadata: {name: job, labels: {kai.scheduler/queue: nope}}\n"
        "spec:\n  replicas: 1\n  template:\n    cliques:\n    - name: w\n"
        "      spec: {roleName: w, replicas: 1, podSpec: {schedulerName: kai-scheduler,\n"
        "             containers: [{name: c, image: x}]}}\n")
    done = subprocess.run([sys.executable, "-m", "phalanx.cli.main", "validate", str(f)],
                          capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "metadata.labels[kai.scheduler/queue]" in done.stderr, done.stderr


def test_a_field_the_scheduler_ignores_is_a_warning_and_named_in_the_summary(
        tmp_path: Path) -> None:
    """Admitted but not honoured (a Volcano queue on koord-scheduler's pods): `validate` warns
    as kubectl prints an API server's warnings, and the run's summary says what is ignored."""
    f = tmp_path / "pcs.yaml"
    f.write_text(
        "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\n"
        "metadata: {name: job, labels: {volcano.sh/queue-name: research}}\n"
        "spec:\n  replicas: 1\n  template:\n    cliques:\n    - name: w\n"
        "      spec: {roleName: w, replicas: 1, podSpec: {schedulerName: koord-scheduler,\n"
        "             containers: [{name: c, image: x}]}}\n")
    main = [sys.executable, "-m", "phalanx.cli.main"]
    done = subprocess.run([*main, "validate", str(f)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert ("Warning: PodCliqueSet job: metadata.labels[volcano.sh/queue-name]: "
            in done.stderr), done.stderr
    ran = subprocess.run([*main, "run", "-q", "--no-save", str(f)], capture_output=True,
                         text=True, check=False)
    assert "ignores 1 requested feature(s): metadata.labels[volcano.sh/queue-name]" \
        in ran.stdout, ran.stdout
