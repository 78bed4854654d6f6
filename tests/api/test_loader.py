from pathlib import Path

import pytest

from phalanx.api.core import Pod
from phalanx.api.errors import ManifestError
from phalanx.api.grove import PodCliqueSet
from phalanx.api.loader import dump_yaml, load_file, load_yaml

PCS = """\
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: demo
spec:
  replicas: 1
  template:
    cliques:
    - name: worker
      spec:
        replicas: 2
        roleName: worker
        podSpec:
          containers:
          - name: main
            image: busybox
"""


def _error(text: str, source: str = "workload.yaml") -> ManifestError:
    with pytest.raises(ManifestError) as info:
        load_yaml(text, source=source)
    return info.value


def test_loads_multiple_documents_and_lists():
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a}]}\n"
    lst = (
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n"
        "  metadata: {name: team-a}\n"
    )
    objs = load_yaml(f"---\n{PCS}---\n# only a comment\n---\n{pod}---\n{lst}")
    assert [type(o).__name__ for o in objs] == ["PodCliqueSet", "Pod", "Namespace"]


def test_load_file(tmp_path: Path):
    path = tmp_path / "pcs.yaml"
    path.write_text(PCS)
    (pcs,) = load_file(path)
    assert isinstance(pcs, PodCliqueSet) and pcs.name == "demo"


def test_timestamps_stay_strings_until_typed():
    (pod,) = load_yaml(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
        "  annotations: {created: 2026-01-01T00:00:00Z}\n"
        "  creationTimestamp: 2026-01-01T00:00:00Z\n"
        "spec: {containers: [{name: a}]}\n"
    )
    assert pod.metadata.annotations["created"] == "2026-01-01T00:00:00Z"
    assert pod.metadata.creation_timestamp.year == 2026


def test_malformed_yaml_names_file_document_and_line():
    err = _error(PCS + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: [p\n")
    text = str(err)
    assert text.startswith("workload.yaml, document 2: malformed YAML at line 21, column 1:")


def test_duplicate_keys_are_errors():
    err = _error("apiVersion: v1\nkind: Pod\nkind: Pod\n")
    assert "duplicate key 'kind' (first defined on line 2)" in str(err)


def test_unknown_field_with_suggestion_and_line():
    err = _error(PCS.replace("replicas: 2", "replica: 2"))
    assert str(err) == (
        "workload.yaml, document 1 (PodCliqueSet/demo): line 11: "
        "spec.template.cliques[0].spec.replica: unknown field; did you mean 'replicas'?"
    )
    assert err.errors[0].path == "spec.template.cliques[0].spec.replica"


def test_unknown_field_without_close_match_lists_fields():
    err = _error(PCS.replace("    - name: worker\n", "    - name: worker\n      zzz: 1\n"))
    assert "spec.template.cliques[0].zzz: unknown field; expected one of: name, labels" in str(err)


def test_wrong_types_say_what_was_expected():
    text = PCS.replace("replicas: 2", "replicas: two").replace(
        "image: busybox", "image: busybox\n            resources: {requests: {cpu: lots}}"
    )
    err = _error(text)
    lines = str(err).splitlines()
    assert lines[0] == "workload.yaml, document 1 (PodCliqueSet/demo): 2 problems"
    assert lines[1] == (
        "  line 11: spec.template.cliques[0].spec.replicas: expected an integer, got string 'two'"
    )
    assert lines[2] == (
        "  line 17: spec.template.cliques[0].spec.podSpec.containers[0].resources.requests.cpu: "
        "invalid quantity 'lots'; expected e.g. 500m, 2, 1.5, 16Gi or 1G"
    )


_CONTAINERS = "          containers:\n          - name: main\n            image: busybox\n"
TYPE_CASES = [
    (
        ("spec:\n  replicas: 1\n", "status: 7\nspec:\n"),
        "status: expected a mapping (an object with fields), got integer 7",
    ),
    (
        ("    cliques:\n", "    cliques: {}\n    x:\n"),
        "spec.template.cliques: expected a list, got a mapping",
    ),
    (("image: busybox", "image: [a]"), "containers[0].image: expected a string, got a list"),
    (
        ("  name: demo", "  name: demo\n  labels: {a: 1}"),
        "metadata.labels.a: expected a string, got integer 1",
    ),
    (("    cliques:", "    terminationDelay: 4 hours\n    cliques:"), "invalid duration '4 hours'"),
    (
        ("    cliques:", "    cliqueStartupType: Random\n    cliques:"),
        "must be one of 'CliqueStartupTypeAnyOrder'",
    ),
    (("  replicas: 1", "  replicas: -1"), "spec.replicas: must be >= 0, got integer -1"),
    (
        (_CONTAINERS, "          containers: []\n"),
        "containers: must have at least 1 items, got 0",
    ),
]


@pytest.mark.parametrize(("change", "expected"), TYPE_CASES)
def test_type_errors(change, expected):
    old, new = change
    assert old in PCS
    assert expected in str(_error(PCS.replace(old, new)))


def test_missing_required_fields():
    err = _error(PCS.replace("        podSpec:\n" + _CONTAINERS, ""))
    assert str(err) == (
        "workload.yaml, document 1 (PodCliqueSet/demo): line 11: "
        "spec.template.cliques[0].spec.podSpec: required field is missing"
    )
    err = _error("apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: x}\n")
    assert "spec: required field is missing" in str(err)


def test_wrong_api_version_and_unknown_kind():
    err = _error(PCS.replace("grove.io/v1alpha1", "grove.io/v1"))
    assert str(err) == (
        "workload.yaml, document 1 (PodCliqueSet/demo): kind PodCliqueSet is not served at "
        "apiVersion 'grove.io/v1'; use apiVersion grove.io/v1alpha1"
    )
    err = _error(PCS.replace("kind: PodCliqueSet", "kind: PodCliqueSett"))
    assert "unknown kind 'PodCliqueSett'" in str(err) and "did you mean 'PodCliqueSet'?" in str(err)
    assert "PodGang (scheduler.grove.io/v1alpha1)" in str(err)  # lists the known kinds
    err = _error("metadata: {name: x}\n")
    assert "missing apiVersion and kind" in str(err)


def test_not_a_mapping():
    err = _error("- a\n- b\n")
    assert "document 1: expected a Kubernetes object" in str(err)


def test_never_a_pydantic_traceback():
    err = _error(PCS.replace("replicas: 2", "replicas: {a: 1}"))
    assert "pydantic" not in str(err) and "Input should" not in str(err)
    assert err.__cause__ is None and err.__suppress_context__


def test_dump_order_and_multiline():
    (pcs,) = load_yaml(PCS)
    pod = Pod.model_validate(
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "args": ["x\ny\n"]}]}}
    )
    text = dump_yaml([pcs, pod])
    docs = text.split("---\n")
    assert len(docs) == 2
    assert [line.split(":")[0] for line in docs[0].splitlines() if not line.startswith(" ")] == [
        "apiVersion", "kind", "metadata", "spec",
    ]
    assert [line.split(":")[0] for line in docs[1].splitlines() if not line.startswith(" ")] == [
        "apiVersion", "kind", "metadata", "spec", "status",
    ]
    assert "- |\n" in docs[1]
    assert load_yaml(text) == [pcs, pod]


def test_load_path_reads_a_directory_in_name_order(tmp_path: Path):
    from phalanx.api.loader import load_path

    (tmp_path / "b.yaml").write_text(PCS)
    (tmp_path / "a.yml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n")
    (tmp_path / "notes.txt").write_text("not yaml: [")
    objs = load_path(tmp_path)
    assert [o.kind for o in objs] == ["Namespace", "PodCliqueSet"]
    assert load_path(tmp_path / "b.yaml")[0].name == "demo"


def test_pattern_and_long_field_list_messages():
    err = _error(PCS.replace("    cliques:", "    topologyConstraint: {packDomain: Rack}\n    cliques:"))
    assert (
        "spec.template.topologyConstraint.packDomain: invalid value 'Rack': a topology domain is "
        "lower-case letters, digits and '-', starting with a letter (e.g. region, zone"
    ) in str(err)
    err = _error(PCS.replace("          containers:", "          qqq: 1\n          containers:"))
    assert "podSpec.qqq: unknown field; expected one of: containers, initContainers" in str(err)
    assert "more)" in str(err)
