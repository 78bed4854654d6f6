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
