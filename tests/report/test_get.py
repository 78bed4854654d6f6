"""`phalanx get` on a saved run (issue 25 items 1, 11 and 12): printer columns with JSONPath
filters, kubectl's output formats and decorations, and `--at` at any time."""

import json

import pytest
import yaml

from phalanx.report.get import GetError, find, render
from phalanx.sim.record import RunRecord, Snapshot

from .objects import object_record


def _get(kind: str, *names: str, output: str = "table", **kw: object) -> str:
    rec = object_record()
    opts = {k: kw.pop(k) for k in ("show_labels", "label_columns") if k in kw}
    result = find(rec, kind, list(names), **kw)  # type: ignore[arg-type]
    return render(rec, result, output, single=len(names) == 1, **opts)  # type: ignore[arg-type]


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_podgang_columns_with_a_jsonpath_filter_are_filled() -> None:
    # Grove's columns; the two conditions (priority 1) only in the wide output, as kubectl.
    assert _rows(_get("podgangs"))[0] == ["NAME", "PHASE", "AGE"]
    rows = _rows(_get("podgangs", output="wide"))
    assert rows[0] == ["NAME", "PHASE", "INITIALIZED", "SCHEDULED", "AGE"]
    assert rows[1][:4] == ["big-0", "Pending", "True", "False"]
    assert rows[2][:4] == ["train-0", "Running", "True", "True"]


def test_nodes_wide_has_kubectl_columns_and_the_allocatable() -> None:
    head = _get("nodes").splitlines()[0].split()
    assert head == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    wide = _get("nodes", output="wide").splitlines()
    assert wide[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP",
                               "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
                               "CONTAINER-RUNTIME", "CPU", "MEMORY", "GPU"]
    assert wide[2].split()[1] == "Ready,SchedulingDisabled"
    assert wide[1].split()[-3:] == ["96", "1Ti", "8"]


def test_pods_wide_has_kubectl_columns() -> None:
    head = _get("pods", output="wide").splitlines()[0]
    assert head.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                            "NOMINATED", "NODE", "READINESS", "GATES"]


def test_output_name_and_several_kinds_and_all() -> None:
    assert _get("pods,podgangs", output="name").splitlines() == [
        "pod/big-0-w-0", *(f"pod/train-0-worker-{k}" for k in range(4)),
        "podgang.scheduler.grove.io/big-0", "podgang.scheduler.grove.io/train-0"]
    both = _get("pods,pg")
    tables = both.split("\n\n")
    assert len(tables) == 2 and tables[0].startswith("NAME") and tables[1].startswith("NAME")
    assert "pod/big-0-w-0" in tables[0] and "podgang.scheduler.grove.io/big-0" in tables[1]
    everything = _get("all")
    for prefix in ("podcliqueset.grove.io/train", "podclique.grove.io/train-0-worker",
                   "podcliquescalinggroup.grove.io/train-0-model",
                   "podgang.scheduler.grove.io/train-0", "pod/train-0-worker-0"):
        assert prefix in everything


def test_namespaces_default_and_all() -> None:
    assert "other-0" not in _get("pods")
    everything = _get("pods", namespace=None)
    rows = _rows(everything)
    assert rows[0][0] == "NAMESPACE"
    assert ["team-a", "other-0"] == rows[-1][:2]
    assert _get("pods", namespace="team-a").splitlines()[1].startswith("other-0")


def test_show_labels_and_label_columns() -> None:
    text = _get("pods", "train-0-worker-1", show_labels=True,
                label_columns=["grove.io/podgang", "nope/missing"])
    head, row = text.splitlines()
    assert head.split()[-3:] == ["PODGANG", "MISSING", "LABELS"]
    labels = ("app.kubernetes.io/part-of=train,grove.io/podclique=train-0-worker,"
              "grove.io/podgang=train-0")
    assert row.split()[-2:] == ["train-0", labels]
    nodes = _get("nodes", show_labels=True).splitlines()
    assert nodes[1].endswith("kubernetes.io/hostname=node-000,topology.phalanx.dev/rack=rack-0")


def test_tables_are_never_cut() -> None:
    rec = object_record()
    long = "x" * 150
    rec.objects["Pod"][0]["metadata"]["name"] = long
    text = render(rec, find(rec, "pods", []), "table")
    assert any(line.startswith(long) for line in text.splitlines())


def test_yaml_looks_like_kubectl() -> None:
    text = _get("podgang", "big-0", output="yaml")
    assert "reason: ''" not in text and "message: ''" not in text
    assert 'status: "True"' in text and 'resourceVersion: "1"' in text
    assert 'creationTimestamp: "2026-01-01T00:00:00Z"' in text
    keys = [line.split(":")[0] for line in text.splitlines() if not line.startswith(" ")]
    assert keys == sorted(keys) == ["apiVersion", "kind", "metadata", "spec", "status"]
    doc = yaml.safe_load(_get("pods", output="yaml"))
    assert doc["kind"] == "List" and len(doc["items"]) == 5
    assert json.loads(_get("pod", "big-0-w-0", output="json"))["metadata"]["name"] == "big-0-w-0"


def test_at_any_time_from_the_history() -> None:
    rows = _rows(_get("podgangs", at=90.0))
    assert rows[1][:2] == ["big-0", "Running"]  # before it was preempted at 119s
    assert _rows(_get("podgangs", at=150.0))[1][:2] == ["big-0", "Pending"]
    assert "SchedulingDisabled" not in _get("nodes", at=299.0)
    assert "SchedulingDisabled" in _get("nodes", at=301.0)


def test_without_history_the_error_names_snapshot_every_and_says_durations() -> None:
    rec: RunRecord = object_record()
    rec.history = []
    rec.snapshots = [Snapshot(t=139.0, label="before step 1 (apply)", objects={})]
    with pytest.raises(GetError) as err:
        find(rec, "pods", [], at=60.0)
    message = str(err.value)
    assert "snapshotEvery" in message and "2m19s" in message and "1m" in message
    assert "139s" not in message and "60s" not in message


def test_unknown_names_and_kinds() -> None:
    with pytest.raises(GetError, match='pods "nope" not found'):
        _get("pods", "nope")
    with pytest.raises(GetError, match="unknown resource type"):
        _get("widgets")


def test_an_absent_counter_is_zero_only_where_the_crd_would_default_it() -> None:
    """As kubectl shows Grove's objects from kube-apiserver: the CRD defaults a counter to 0
    where its parent exists; without the parent (no status, no updateProgress) the cell is
    blank."""
    rows = {r[0]: r for r in _rows(_get("podcliquesets"))}
    # train: status without updatedReplicas or updateProgress; idle: no status at all.
    assert rows["NAME"][:8] == ["NAME", "REPLICAS", "AVAILABLE", "UPDATED", "PCLQS-UPDATED",
                                "PCLQS-TOTAL", "PCSGS-UPDATED", "PCSGS-TOTAL"]
    assert rows["train"][1:4] == ["3", "3", "0"] and len(rows["train"]) == 5  # blanks, AGE
    assert rows["idle"][1] == "0" and len(rows["idle"]) == 3  # REPLICAS (spec), AGE
