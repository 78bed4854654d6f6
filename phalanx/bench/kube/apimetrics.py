"""API requests from the API server's own counters: `apiserver_request_total` deltas.

    before = request_counts(metrics_text)           # {RequestKey: count}
    ...                                              # the scheduler runs
    delta = counts_delta(before, request_counts(text_after))
    by_verb(delta)                                   # {"POST": 4100, "LIST": 9, ...}

Only resource requests count (`resource` label set): non-resource GETs (/metrics, /healthz,
/readyz, /version) are probes, not scheduling work; so are the TokenReviews and
SubjectAccessReviews kube-scheduler makes when the bench reads its /configz. The counter has
no user or user-agent label, so attribution comes from the measuring window: the bench runs
one scheduler at a time and makes no resource request of its own inside the window (its one
pods watch is opened before and closed after it). The API server's own background requests
are measured in an idle window before the runs (`background_requests_per_second`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from prometheus_client.parser import text_string_to_metric_families

METRIC = "apiserver_request_total"
# Made for the bench's own /configz read of kube-scheduler (delegated authentication and
# authorization), not by the scheduler's work: left out of every count.
PROBE_RESOURCES = frozenset({("authentication.k8s.io", "tokenreviews"),
                             ("authorization.k8s.io", "subjectaccessreviews")})


class RequestKey(NamedTuple):
    verb: str
    group: str
    resource: str
    subresource: str
    code: str


def only_metrics(text: str, *names: str) -> str:
    """The lines of the named metric families (samples, HELP and TYPE) from an exposition.

    kube-apiserver's /metrics is megabytes of histograms; parsing all of it takes about a
    second of CPU in prometheus_client, which a bench scraping every second would take from
    the scheduler it measures. The families asked for are a few hundred lines."""
    starts = tuple(f"{n}{sep}" for n in names for sep in ("{", " "))
    comments = tuple(f"# {kind} {n} " for n in names for kind in ("HELP", "TYPE"))
    keep = [line for line in text.splitlines()
            if line.startswith(starts) or (line.startswith("# ") and line.startswith(comments))]
    return "\n".join(keep) + "\n"


def request_counts(text: str) -> dict[RequestKey, float]:
    """`apiserver_request_total` samples of resource requests, by verb/group/resource/code."""
    out: dict[RequestKey, float] = {}
    for family in text_string_to_metric_families(only_metrics(text, METRIC)):
        if family.name not in (METRIC, METRIC.removesuffix("_total")):
            continue
        for sample in family.samples:
            if sample.name != METRIC:
                continue
            lbl = sample.labels
            resource = lbl.get("resource", "")
            if not resource or (lbl.get("group", ""), resource) in PROBE_RESOURCES:
                continue
            key = RequestKey(lbl.get("verb", ""), lbl.get("group", ""), resource,
                             lbl.get("subresource", ""), lbl.get("code", ""))
            out[key] = out.get(key, 0.0) + sample.value
    return out


def counts_delta(before: Mapping[RequestKey, float],
                 after: Mapping[RequestKey, float]) -> dict[RequestKey, int]:
    """Requests made between two scrapes (keys with none left out)."""
    out = {}
    for key, value in after.items():
        d = round(value - before.get(key, 0.0))
        if d > 0:
            out[key] = d
    return out


def _sum_by(delta: Mapping[RequestKey, int], name: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, n in delta.items():
        out[name_of(key, name)] = out.get(name_of(key, name), 0) + n
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def name_of(key: RequestKey, how: str) -> str:
    if how == "verb":
        return key.verb
    if how == "resource":
        res = f"{key.resource}/{key.subresource}" if key.subresource else key.resource
        return f"{key.group}/{res}" if key.group else res
    if how == "code":
        return key.code
    return f"{key.verb} {name_of(key, 'resource')}"


def by_verb(delta: Mapping[RequestKey, int]) -> dict[str, int]:
    return _sum_by(delta, "verb")


def by_resource(delta: Mapping[RequestKey, int]) -> dict[str, int]:
    return _sum_by(delta, "resource")


def by_call(delta: Mapping[RequestKey, int]) -> dict[str, int]:
    """"VERB group/resource/subresource" -> count."""
    return _sum_by(delta, "call")


def errors(delta: Mapping[RequestKey, int]) -> dict[str, int]:
    """Non-2xx answers by "code VERB resource" (conflicts, throttling, ...)."""
    out: dict[str, int] = {}
    for key, n in delta.items():
        if not key.code.startswith("2"):
            name = f"{key.code} {name_of(key, 'call')}"
            out[name] = out.get(name, 0) + n
    return out


def total(delta: Iterable[int] | Mapping[RequestKey, int]) -> int:
    values = delta.values() if isinstance(delta, Mapping) else delta
    return int(sum(values))
