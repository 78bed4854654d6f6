"""Hypothesis strategies for bad input: valid documents with a few random mutations.

Starting from a valid document keeps most examples deep enough to reach admission, the
operator and the scheduler (a random dict would almost always stop at "unknown kind"); the
mutations then replace, delete, add or duplicate values anywhere in it, with values chosen
to hit the usual weak spots (wrong types, empty and huge strings, negative or zero counts,
odd quantities and durations, unknown scheduler names, unicode).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

Path = tuple[str | int, ...]

# Small ints only: a valid document with replicas in the thousands is accepted, rightly,
# and would turn a fuzz example into a benchmark.
_TRICKY = st.sampled_from([
    "", " ", "0", "-1", "1e9", "NaN", "0.5", "4h", "-5m", "1Ki", "100Ei", "bogus", "rack",
    "zone", "host", "default-scheduler", "kai-scheduler", "volcano", "koord-scheduler",
    "phalanx-scheduler", "nvidia.com/gpu", "CliqueStartupTypeExplicit", "RollingRecreate",
    "a" * 70, "UPPER", "with space", "x/y", "\u00e9t\u00e9", "\U0001f600", "null", "~",
])
LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-3, max_value=9), _TRICKY,
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.text(max_size=10),
)
VALUE = st.recursive(
    LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["name", "replicas", "spec", "x"]) | st.text(max_size=6),
                                            inner, max_size=3)),
    max_leaves=5,
)


def _alike(value: Any) -> st.SearchStrategy[Any]:
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(min_value=-2, max_value=9)
    if isinstance(value, float):
        return st.floats(min_value=-1.0, max_value=1e6, allow_nan=False)
    if isinstance(value, str):
        return _TRICKY | st.text(max_size=8) | st.just(value + value[:3])
    if isinstance(value, list):
        return st.just([]) | st.just(value + value[:1]) | st.just(value[::-1])
    if isinstance(value, dict):
        return st.just({}) | st.just({k: v for k, v in list(value.items())[1:]})
    return VALUE


def paths(doc: Any, prefix: Path = ()) -> list[Path]:
    """Every path into `doc` (the root excluded)."""
    out: list[Path] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((*prefix, k))
            out.extend(paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append((*prefix, i))
            out.extend(paths(v, (*prefix, i)))
    return out


def _parent(doc: Any, path: Path) -> Any:
    for p in path[:-1]:
        doc = doc[p]
    return doc


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any], max_mutations: int = 3) -> dict[str, Any]:
    """`base` with 1..max_mutations random edits (the root always stays a mapping)."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, max_mutations))):
        # apiVersion/kind stay: a wrong kind stops at "unknown kind" (tested elsewhere).
        ps = [p for p in paths(doc) if p not in (("apiVersion",), ("kind",))]
        if not ps:
            break
        path = draw(st.sampled_from(ps))
        parent = _parent(doc, path)
        last = path[-1]
        op = draw(st.sampled_from(["alike", "alike", "alike", "replace", "delete", "add",
                                   "duplicate"]))
        if op == "alike":  # same type, odd value: reaches validation past the schema
            parent[last] = draw(_alike(parent[last]))
        elif op == "replace":
            parent[last] = draw(VALUE)
        elif op == "delete":
            del parent[last]
        elif op == "add":
            target = parent[last]
            if isinstance(target, dict):
                target[draw(st.sampled_from(["extra", "name", "replicas", "podSpec"]) | st.text(max_size=6))] = draw(VALUE)
            elif isinstance(target, list):
                target.append(draw(VALUE))
            else:
                parent[last] = draw(VALUE)
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))  # duplicate a list entry (same name)
        else:
            parent[last] = copy.deepcopy(parent[last])
    return doc
