"""YAML and JSON as `kubectl get -o yaml|json` print them.

kubectl marshals to JSON and converts that to YAML (sigs.k8s.io/yaml over go-yaml v2), so:
keys are sorted; fields tagged `omitempty` that are empty are absent (our stored objects
keep `reason: ''` and `message: ''` on conditions, which kubectl never shows); a string
that would read back as another type (`"True"`, `"42"`, a timestamp, `""`) is double-quoted;
other strings are plain when YAML allows it, else single-quoted; multi-line strings are `|`
blocks; long lines are never folded. JSON is indented by 4 spaces, in field order.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

_STR = "tag:yaml.org,2002:str"
# go-yaml v2 reads these as booleans too (YAML 1.1); PyYAML's resolver does not.
_GO_BOOLS = frozenset({"y", "Y", "n", "N"})
# Empty strings that Kubernetes serialises anyway (fields without omitempty).
_KEEP_EMPTY = frozenset({"imageID"})


class _KubectlDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        style: str | None = "|"
    elif value in _GO_BOOLS or dumper.resolve(yaml.ScalarNode, value, (True, False)) != _STR:
        style = '"'
    else:
        style = None  # plain if YAML allows it, else single-quoted (as go-yaml chooses)
    return dumper.represent_scalar(_STR, value, style=style)


_KubectlDumper.add_representer(str, _represent_str)


def without_empty_strings(data: Any) -> Any:
    """A copy without `key: ""` entries (omitempty), keeping the few Kubernetes always writes."""
    if isinstance(data, dict):
        return {k: without_empty_strings(v) for k, v in data.items()
                if not (v == "" and k not in _KEEP_EMPTY)}
    if isinstance(data, list):
        return [without_empty_strings(v) for v in data]
    return data


def kubectl_yaml(data: Any) -> str:
    return yaml.dump(without_empty_strings(data), Dumper=_KubectlDumper, sort_keys=True,
                     allow_unicode=True, default_flow_style=False, width=2**31 - 1)


def kubectl_json(data: Any) -> str:
    return json.dumps(without_empty_strings(data), indent=4, ensure_ascii=False) + "\n"
