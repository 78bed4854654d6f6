import json

import yaml
from rich.console import Console

from phalanx.report.terminal import machine_output, print_tables

from .synthetic import synthetic_record


def test_tables_show_gangs_placement_pending_reason_and_headline() -> None:
    console = Console(width=160, record=True, color_system=None)
    print_tables(synthetic_record(), console)
    out = console.export_text()
    assert "PODGANG" in out and "PLACEMENT" in out and "SCHEDULED IN" in out
    assert "node-[008-011]" in out and "rack=rack-2" in out
    assert "Pending gangs" in out and "every rack has at most 4 free nodes" in out
    assert "3/5 gangs scheduled" in out.splitlines()[-1]


def test_json_and_yaml_carry_the_same_summary() -> None:
    as_json = json.loads(machine_output(synthetic_record(), "json"))
    as_yaml = yaml.safe_load(machine_output(synthetic_record(), "yaml"))
    assert as_json == as_yaml
    assert as_json["totals"]["gangs_pending"] == 2
    assert {g["name"] for g in as_json["gangs"]} >= {"train-0", "big-0"}
    assert [p["name"] for p in as_json["pending"]] == ["scavenger-0", "big-0"]


def test_tables_are_never_cut_on_a_narrow_terminal() -> None:
    """kubectl prints long lines whole; the run's tables did cut placements at 80 columns
    (`node-[048-0...`) and could drop a column (issue 25 item 11)."""
    rec = synthetic_record()
    g = rec.gang("train-2")
    g.nodes = [f"node-{i:03d}" for i in range(0, 40, 2)]  # a long, non-contiguous placement
    console = Console(width=60, record=True, color_system=None)
    print_tables(rec, console)
    out = console.export_text()
    placement = ",".join(f"{i:03d}" for i in range(0, 40, 2))
    row = next(line for line in out.splitlines() if line.startswith("train-2"))
    assert f"node-[{placement}]" in row and "…" not in out
    assert row.split()[-2:] == ["batch", "(100)"]  # the last column is still there


def test_a_pending_gang_has_one_reason_and_points_at_describe() -> None:
    rec = synthetic_record()
    rec.gang("big-0").reasons = ["Scheduled: big-0-w: 0/8 scheduled"]
    console = Console(width=300, record=True, color_system=None)
    print_tables(rec, console)
    line = next(x for x in console.export_text().splitlines() if x.strip().startswith("big-0 ("))
    assert line.strip() == ("big-0 (waiting 9m30s): 0/16 nodes fit 8 pods x 8 nvidia.com/gpu "
                            "in one rack: every rack has at most 4 free nodes (needs 8) (more: "
                            "phalanx describe podgang big-0)")


def test_a_namespace_column_comes_first_when_names_span_namespaces() -> None:
    from .synthetic import two_namespace_record

    console = Console(width=200, record=True, color_system=None)
    print_tables(two_namespace_record(), console)
    lines = console.export_text().splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "PODCLIQUESET"]
    assert [ln.split()[:2] for ln in lines[1:3]] == [["team-a", "pretrain"],
                                                      ["team-b", "pretrain"]]
    assert any(ln.split()[:2] == ["NAMESPACE", "PODGANG"] for ln in lines)
    assert any(ln.strip().startswith("team-b/pretrain-0 (waiting") for ln in lines)
    one = Console(width=200, record=True, color_system=None)
    print_tables(synthetic_record(), one)
    assert "NAMESPACE" not in one.export_text()
