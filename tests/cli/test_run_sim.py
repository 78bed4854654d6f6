"""`phalanx run` end to end on the real stack (issue 25 items 2, 3, 10, 12, 14): one phase
for a gang everywhere, the counts after a scale-in, --strict, and `get --at` any time."""

import re
import subprocess
import sys
from pathlib import Path



def phalanx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phalanx.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _row(text: str, first: str) -> list[str]:
    return next(line.split() for line in text.splitlines() if line.startswith(first))


TRAINING = """\
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: pretrain
  annotations: {sim.phalanx.dev/run-for: 30m}
spec:
  replicas: 2
  template:
    cliques:
    - name: trainer
      spec:
        roleName: trainer
        replicas: 8
        podSpec:
          schedulerName: phalanx-scheduler
          containers:
          - name: trainer
            image: x
            resources:
              requests: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8"}
              limits: {nvidia.com/gpu: "8"}
"""


def test_a_finished_gang_is_succeeded_everywhere(tmp_path: Path) -> None:
    """`run` said Succeeded, `get pg` Starting, and `describe` listed GangScheduled=False
    "0/8 members created" on a gang that had finished (issue 25 item 2)."""
    (tmp_path / "w.yaml").write_text(TRAINING)
    r = phalanx("run", "w.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _row(r.stdout, "pretrain-0")[1] == "Succeeded"
    got = phalanx("get", "pg", "-o", "wide", cwd=tmp_path).stdout
    assert _row(got, "pretrain-0")[1:4] == ["Succeeded", "True", "True"]
    described = phalanx("describe", "podgang", "pretrain-0", cwd=tmp_path).stdout
    assert "Phase:         Succeeded" in described
    assert "GangIncomplete" not in described and "0/8 members created" not in described
    assert re.search(r"\n  GangScheduled\s+True\s+Scheduled\s", described)


SCALE_IN = """\
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: svc}
spec:
  replicas: 1
  template:
    cliques:
    - name: w
      spec:
        roleName: w
        replicas: 4
        minAvailable: 2
        autoScalingConfig: {minReplicas: 2, maxReplicas: 8}
        podSpec:
          schedulerName: phalanx-scheduler
          containers:
          - {name: c, image: x, resources: {requests: {cpu: "1"}}}
---
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: idle}
spec:
  replicas: 0
  template:
    cliques:
    - name: w
      spec:
        roleName: w
        replicas: 1
        podSpec:
          containers:
          - {name: c, image: x}
---
apiVersion: sim.phalanx.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  steps:
  - at: 1m
    scale: {kind: PodClique, name: svc-0-w, replicas: 2}
  - at: 2m
    delete: {kind: PodCliqueSet, name: nope}
"""


def test_scale_in_zero_replicas_strict_and_get_at(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(SCALE_IN)
    r = phalanx("run", "w.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "pass --strict to exit 5" in " ".join(r.stderr.split())
    assert _row(r.stdout, "svc ")[2:6] == ["1", "1/1", "2/2", "Running"]
    assert _row(r.stdout, "idle")[2] == "0"
    assert _row(r.stdout, "svc-0")[2] == "2/2"
    strict = phalanx("run", "w.yaml", "--strict", "--no-save", cwd=tmp_path)
    assert strict.returncode == 5
    assert "1 Scenario step(s) failed (at 2m: delete PodCliqueSet nope" in " ".join(
        strict.stderr.split())
    before = phalanx("get", "pods", "--at", "59s", cwd=tmp_path).stdout
    after = phalanx("get", "pods", "--at", "1m30s", cwd=tmp_path).stdout
    assert len(before.splitlines()) == 1 + 4 and len(after.splitlines()) == 1 + 2


def test_every_object_history_is_kept_only_where_something_reads_it(tmp_path: Path,
                                                                    monkeypatch) -> None:
    """The history of every object serves `get --at` on a saved run and the HTML report's
    plots over time; `--no-save` without `--report` keeps none (building it was 9% of a
    large run)."""
    from typer.testing import CliRunner

    from phalanx.cli.main import app
    from phalanx.sim import runner

    made: list[bool] = []

    class Counted(runner.ObjectHistory):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            made.append(True)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(runner, "ObjectHistory", Counted)
    (tmp_path / "w.yaml").write_text(TRAINING)
    monkeypatch.chdir(tmp_path)
    for args, kept in ((["--no-save"], False), (["--save", "run.json"], True),
                       (["--no-save", "--report", "r.html"], True)):
        made.clear()
        out = CliRunner().invoke(app, ["run", "w.yaml", "-q", *args])
        assert out.exit_code == 0, out.output
        assert made == ([True] if kept else []), args


TWO_NAMESPACES = """\
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
"""


def _pcs_in(namespace: str, gpus: int) -> str:
    return TRAINING.replace("  name: pretrain\n", f"  name: pretrain\n  namespace: {namespace}\n") \
        .replace("replicas: 2\n", "replicas: 1\n").replace("replicas: 8\n", "replicas: 2\n") \
        .replace('nvidia.com/gpu: "8"}', f'nvidia.com/gpu: "{gpus}"}}')


def test_a_pending_gang_keeps_its_own_explanation_when_names_repeat_across_namespaces(
        tmp_path: Path) -> None:
    """team-a's pretrain fits, team-b's asks 9 GPUs per pod (8 per node): the pending gang
    reads team-b/pretrain-0 with why it can never fit. Explanations were keyed by gang name,
    so team-a's scheduled gang took it and the pending one said "no explanation"."""
    (tmp_path / "w.yaml").write_text("---\n".join(
        [TWO_NAMESPACES, _pcs_in("team-a", 1), _pcs_in("team-b", 9)]))
    r = phalanx("run", "w.yaml", "--save", "run.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    pending = next(line for line in r.stdout.splitlines() if "(waiting" in line)
    assert pending.strip().startswith("team-b/pretrain-0 (waiting")
    assert "can never be scheduled" in pending and "9 nvidia.com/gpu" in pending
    assert "phalanx describe podgang pretrain-0 -n team-b" in pending
    assert _row(r.stdout, "team-a")[:2] == ["team-a", "pretrain"]
    # describe, as the hint says; without the namespace it names both instead of guessing.
    d = phalanx("describe", "podgang", "pretrain-0", "-n", "team-b", "--run", "run.json",
                cwd=tmp_path)
    assert d.returncode == 0 and "Namespace:     team-b" in d.stdout
    assert "can never be scheduled" in d.stdout
    d = phalanx("describe", "podgang", "pretrain-0", "--run", "run.json", cwd=tmp_path)
    assert d.returncode != 0 and "Traceback" not in d.stderr
    assert "is in 2 namespaces (team-a, team-b): say which with --namespace" in d.stderr
