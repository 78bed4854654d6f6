"""Topology spread constraints (kube-scheduler 1.36's PodTopologySpread), parsed once per pod,
and the counting of matching pods per topology domain on the snapshot's columns.

A constraint's selector follows kube's rules: a nil `labelSelector` matches no pod; `{}`
matches every pod for the incoming pod's own "self match", but kube's counting treats an empty
selector as counting nothing (countPodsMatchSelector); `matchLabelKeys` adds `key in (value)`
for each key the pod carries, in the scheduler too (1.36 still merges there, on top of the API
server's merge at creation, which repeats the same requirement and changes nothing).
`minDomains` defaults to 1, `nodeAffinityPolicy` to Honor, `nodeTaintsPolicy` to Ignore (the
NodeInclusionPolicy gate is locked on in 1.36).

Counting (`match_per_row`) asks the snapshot's pod label index for the candidates (the pods
carrying the selector's first equality, or every pod of the namespace), skips terminating
pods as kube does, and returns a count per snapshot row; the plugin then aggregates rows into
domains with `np.bincount` over the topology key's int32 label column. Assumed pods (a gang's
members placed earlier in the same attempt) are in the index like bound ones, so they count.
`MatchCounter` keeps those per-row counts across cycles and recounts only the rows the snapshot
changed since its last look (the scheduler cache re-counts a pod that starts terminating, so
its row changes too).
"""

from __future__ import annotations

import json

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from phalanx.cluster.selectors import (
    LabelSelector,
    Requirement,
    SelectorError,
    parse_label_selector,
)

if TYPE_CHECKING:
    from phalanx.scheduler.framework.types import PodInfo
    from phalanx.scheduler.snapshot import Snapshot

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"

# kube-scheduler's system default constraints (applied to pods without their own, with the
# selector of the Services / controllers that select the pod).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict[str, Any], ...] = (
    {"topologyKey": HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


@dataclass(frozen=True, slots=True)
class Constraint:
    """kube-scheduler's topologySpreadConstraint (the selector parsed, defaults applied)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None  # None: a nil labelSelector, which matches no pod
    min_domains: int = 1
    honor_affinity: bool = True  # nodeAffinityPolicy
    honor_taints: bool = False  # nodeTaintsPolicy

    def matches(self, labels: Mapping[str, str]) -> bool:
        """kube's Selector.Matches (the empty selector matches everything)."""
        return self.selector is not None and self.selector.matches(labels)

    @property
    def counts_pods(self) -> bool:
        """kube's countPodsMatchSelector counts nothing for a nil or an empty selector."""
        return self.selector is not None and not self.selector.empty


@dataclass(frozen=True, slots=True)
class PodSpread:
    """A pod's own constraints by action. `own`: it declares some (then defaults never apply)."""

    hard: tuple[Constraint, ...] = ()
    soft: tuple[Constraint, ...] = ()
    own: bool = False
    error: str = ""  # a selector that does not parse: the field path and why


NO_SPREAD = PodSpread()
_FIELD = "spec.topologySpreadConstraints"


def merge_match_label_keys(
    selector: LabelSelector | None, keys: Sequence[str], labels: Mapping[str, str]
) -> LabelSelector | None:
    """`key in (value)` for each key the pod carries, ANDed with the selector (a nil selector
    stays nil: it matches nothing either way)."""
    if selector is None or not keys:
        return selector
    extra = tuple(Requirement(k, "In", (labels[k],)) for k in keys if k in labels)
    if not extra:
        return selector
    return LabelSelector(extra + selector.requirements)


def _policy(raw: Any, default: bool, where: str) -> bool:
    if raw is None:
        return default
    if raw not in (HONOR, IGNORE):
        raise SelectorError(f"{where}: unsupported value {raw!r} (Honor, Ignore)")
    return raw == HONOR


def _int(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise SelectorError(f"{where}: expected an integer, got {raw!r}")
    try:
        return int(raw)
    except ValueError:
        raise SelectorError(f"{where}: expected an integer, got {raw!r}") from None


def parse_constraint(raw: Mapping[str, Any], labels: Mapping[str, str], where: str) -> Constraint:
    """One constraint as the scheduler reads it; SelectorError names the field."""
    sel_raw = raw.get("labelSelector")
    try:
        selector = None if sel_raw is None else parse_label_selector(sel_raw)
    except SelectorError as exc:
        raise SelectorError(f"{where}.labelSelector: {exc}") from None
    keys = [str(k) for k in raw.get("matchLabelKeys") or ()]
    min_domains = raw.get("minDomains")
    return Constraint(
        max_skew=_int(raw.get("maxSkew") or 0, f"{where}.maxSkew"),
        topology_key=str(raw.get("topologyKey") or ""),
        selector=merge_match_label_keys(selector, keys, labels),
        min_domains=1 if min_domains is None else _int(min_domains, f"{where}.minDomains"),
        honor_affinity=_policy(raw.get("nodeAffinityPolicy"), True, f"{where}.nodeAffinityPolicy"),
        honor_taints=_policy(raw.get("nodeTaintsPolicy"), False, f"{where}.nodeTaintsPolicy"),
    )


def parse_constraints(
    items: Sequence[Any], labels: Mapping[str, str], action: str, path: str = _FIELD
) -> tuple[Constraint, ...]:
    """The constraints of `items` whose whenUnsatisfiable is `action`, in order."""
    out: list[Constraint] = []
    for i, raw in enumerate(items):
        if not isinstance(raw, Mapping):
            raise SelectorError(f"{path}[{i}]: expected an object, got {raw!r}")
        if raw.get("whenUnsatisfiable") == action:
            out.append(parse_constraint(raw, labels, f"{path}[{i}]"))
    return tuple(out)


# Parsed constraints by (their JSON, the values of the labels their matchLabelKeys name):
# a workload's replicas (a gang's members) share one spec, so they parse it once.
_PARSED: dict[tuple[str, tuple[tuple[str, str | None], ...]], PodSpread] = {}
_PARSED_MAX = 4096


def parse_pod_spread(pod: Any) -> PodSpread:
    """A pod's own spread constraints (NO_SPREAD when it declares none)."""
    items = pod.spec.topology_spread_constraints
    if not items:
        return NO_SPREAD
    labels = pod.metadata.labels or {}
    try:
        used = tuple(
            (str(k), labels.get(str(k)))
            for raw in items if isinstance(raw, Mapping)
            for k in raw.get("matchLabelKeys") or ()
        )
        key: tuple[str, tuple[tuple[str, str | None], ...]] | None = (
            json.dumps(items, sort_keys=True), used)
    except (TypeError, ValueError):  # not JSON-shaped: parse (and report) without caching
        key = None
    cached = _PARSED.get(key) if key is not None else None
    if cached is not None:
        return cached
    try:
        hard = parse_constraints(items, labels, DO_NOT_SCHEDULE)
        soft = parse_constraints(items, labels, SCHEDULE_ANYWAY)
        out = PodSpread(hard, soft, own=True)
    except SelectorError as exc:
        out = PodSpread(own=True, error=str(exc))
    if key is not None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = out
    return out


def with_selector(
    constraints: Sequence[Constraint], selector: LabelSelector
) -> tuple[Constraint, ...]:
    return tuple(replace(c, selector=selector) for c in constraints)


# --- counting ----------------------------------------------------------------------------


def _counts(pod: PodInfo, namespace: str, selector: LabelSelector) -> bool:
    return (
        pod.namespace == namespace
        and pod.pod.metadata.deletion_timestamp is None  # terminating pods do not count
        and selector.matches(pod.labels)
    )


_NONE: dict[str, Any] = {}


def _candidates(snap: Snapshot, selector: LabelSelector, namespace: str) -> dict[str, Any]:
    """The pods that may match: those carrying the selector's rarest equality (a label every
    pod shares, such as managed-by, narrows nothing), or every pod of the namespace
    (key -> (row, PodInfo))."""
    index = snap.label_index()
    eq = selector.equalities
    if eq:
        by_label = index.by_label
        return min((by_label.get((namespace, k, v), _NONE) for k, v in eq), key=len)
    return index.by_namespace.get(namespace, {})


def match_per_row(snap: Snapshot, selector: LabelSelector | None, namespace: str) -> np.ndarray:
    """Pods counted on each snapshot row (bound and assumed, not terminating) in `namespace`
    that the selector matches: int64 over rows [0, snap.n). Zero everywhere for a nil or an
    empty selector (kube counts nothing for those)."""
    if selector is None or selector.empty:
        return np.zeros(snap.n, dtype=np.int64)
    pool = _candidates(snap, selector, namespace)
    rows = [row for row, info in pool.values() if _counts(info, namespace, selector)]
    return np.bincount(np.asarray(rows, dtype=np.int64), minlength=snap.n)[: snap.n]


@dataclass(slots=True)
class _Counted:
    snap: Snapshot
    version: int
    per_row: np.ndarray


class MatchCounter:
    """match_per_row kept across cycles per (namespace, selector): later looks recount only
    the rows the snapshot bumped since (a pod assumed, bound, relabelled, terminating or gone;
    a node changed), so a stream of replicas of one workload costs a few rows per cycle, not
    a pass over every matching pod."""

    MAX_ENTRIES = 64

    def __init__(self) -> None:
        self._entries: dict[tuple[str, LabelSelector], _Counted] = {}

    def per_row(self, snap: Snapshot, selector: LabelSelector | None, namespace: str) -> np.ndarray:
        """Matching pods per row [0, snap.n); read-only, valid until the snapshot changes."""
        if selector is None or selector.empty:
            return np.zeros(snap.n, dtype=np.int64)
        key = (namespace, selector)
        entry = self._entries.pop(key, None)
        if entry is not None and entry.snap is snap:
            if entry.version == snap.version and entry.per_row.size >= snap.n:
                # Nothing changed since: another constraint's look at the same selector.
                self._entries[key] = entry
                return entry.per_row[: snap.n]
            bumped = snap.rows_bumped_since(entry.version)
            rows = set(bumped) if bumped is not None else None
            # Recount the changed rows when that is cheaper than a pass over the candidates.
            if rows is not None and _recount_is_cheaper(snap, rows, selector, namespace):
                per_row = entry.per_row
                if per_row.size < snap.n:
                    per_row = np.concatenate([per_row, np.zeros(snap.n - per_row.size, np.int64)])
                for row in rows:
                    per_row[row] = sum(
                        1 for info in snap.pods[row].values() if _counts(info, namespace, selector)
                    )
                entry.per_row, entry.version = per_row, snap.version
                self._entries[key] = entry  # most recently used last
                return per_row[: snap.n]
        entry = _Counted(snap, snap.version, match_per_row(snap, selector, namespace))
        if len(self._entries) >= self.MAX_ENTRIES:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = entry
        return entry.per_row


# Recounting this many pods is cheaper than any pass over a selector's candidates (which
# also fills a row-sized array): no need to count the candidates first.
_FEW_PODS = 16


def _recount_is_cheaper(
    snap: Snapshot, rows: set[int], selector: LabelSelector, namespace: str
) -> bool:
    """Whether the pods on `rows` are no more than the candidates (plus a row each); stops
    adding as soon as they are more (many rows change between two looks of a selector when
    other workloads bind in between). The usual look, one row changed since (the pod
    assumed last), counts a few pods and never the candidates."""
    pods = snap.pods
    budget: int | None = None
    seen = 0
    for r in rows:
        seen += len(pods[r])
        if seen > _FEW_PODS:
            if budget is None:
                budget = len(_candidates(snap, selector, namespace)) + len(rows)
            if seen > budget:
                return False
    return True


def has_all_keys(snap: Snapshot, rows: np.ndarray, constraints: Sequence[Constraint]) -> np.ndarray:
    """Per row of `rows`: the node carries every constraint's topology key."""
    ok = np.ones(rows.size, dtype=bool)
    for key in dict.fromkeys(c.topology_key for c in constraints):
        ok &= snap.label_column(key)[rows] > 0
    return ok


def lookup(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """table[ids], 0 where an id is beyond the table (a domain it never saw)."""
    if not ids.size or int(ids.max()) < table.size:
        return table[ids]
    inside = ids < table.size
    out = np.zeros(ids.size, dtype=table.dtype)
    out[inside] = table[ids[inside]]
    return out


# --- for the gang plugins ------------------------------------------------------------------


def has_hard_spread(handle: Any, pod: PodInfo) -> bool:
    """Whether `pod` has DoNotSchedule spread constraints in `handle`'s profile: its own, or
    the profile's default ones with a selector for it. Where each such pod may go depends on
    where its peers went before it, which whole-gang room checks do not model."""
    framework = getattr(handle, "framework", None)
    plugins: Mapping[str, Any] = getattr(framework, "plugins", None) or {}
    plugin = plugins.get(POD_TOPOLOGY_SPREAD)
    if plugin is None:
        return bool(pod.spread.hard)
    fn: Callable[[PodInfo], Sequence[Constraint]] = plugin.hard_constraints
    try:
        return bool(fn(pod))
    except SelectorError:
        return False


__all__ = [
    "Constraint",
    "DO_NOT_SCHEDULE",
    "HONOR",
    "HOSTNAME",
    "IGNORE",
    "NO_SPREAD",
    "PodSpread",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "ZONE",
    "has_all_keys",
    "has_hard_spread",
    "MatchCounter",
    "match_per_row",
    "merge_match_label_keys",
    "parse_constraints",
    "parse_pod_spread",
]
