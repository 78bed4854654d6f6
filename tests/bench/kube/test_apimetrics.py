from phalanx.bench.kube import apimetrics
from phalanx.bench.kube.apimetrics import RequestKey

HEADER = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, \
dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
"""


def sample(value, verb, resource, *, code="201", group="", subresource="", scope="resource",
           version="v1", component="apiserver"):
    return (f'apiserver_request_total{{code="{code}",component="{component}",dry_run="",'
            f'group="{group}",resource="{resource}",scope="{scope}",'
            f'subresource="{subresource}",verb="{verb}",version="{version}"}} {value}\n')


def metrics(binds, events, scrapes, reviews, extra=""):
    return HEADER + "".join([
        sample(binds, "POST", "pods", subresource="binding"),
        sample(events, "POST", "events", group="events.k8s.io"),
        sample(1, "LIST", "nodes", code="200", scope="cluster"),
        # /metrics itself: a non-resource request
        sample(scrapes, "GET", "", code="200", subresource="/metrics", scope="", version="",
               component=""),
        sample(reviews, "POST", "tokenreviews", group="authentication.k8s.io", scope="cluster"),
    ]) + (
        "# HELP apiserver_request_duration_seconds x\n"
        "# TYPE apiserver_request_duration_seconds histogram\n"
        'apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",le="0.05"} 3\n'
    ) + extra


BEFORE = metrics(10, 4, 7, 1)
AFTER = metrics(110, 104, 70, 5, extra=(
    sample(3, "POST", "pods", code="409", subresource="binding")
    + sample(2, "WATCH", "pods", code="200", scope="namespace")))


def test_only_resource_requests_count_and_probes_are_left_out():
    counts = apimetrics.request_counts(BEFORE)
    assert counts == {
        RequestKey("POST", "", "pods", "binding", "201"): 10.0,
        RequestKey("POST", "events.k8s.io", "events", "", "201"): 4.0,
        RequestKey("LIST", "", "nodes", "", "200"): 1.0,
    }


def test_deltas_by_verb_call_and_errors():
    delta = apimetrics.counts_delta(apimetrics.request_counts(BEFORE),
                                    apimetrics.request_counts(AFTER))
    assert apimetrics.total(delta) == 100 + 100 + 3 + 2
    assert apimetrics.by_verb(delta) == {"POST": 203, "WATCH": 2}
    assert list(apimetrics.by_call(delta).items()) == [
        ("POST pods/binding", 103), ("POST events.k8s.io/events", 100), ("WATCH pods", 2)]
    assert apimetrics.by_resource(delta)["pods/binding"] == 103
    assert apimetrics.errors(delta) == {"409 POST pods/binding": 3}


def test_a_counter_that_did_not_move_is_not_in_the_delta():
    same = apimetrics.request_counts(BEFORE)
    assert apimetrics.counts_delta(same, same) == {}


def test_only_the_named_family_is_kept_and_counts_are_those_of_a_full_parse():
    from prometheus_client.parser import text_string_to_metric_families

    # A family whose name starts with the counter's must not be taken for it.
    lookalike = ('# TYPE apiserver_request_total_x counter\n'
                 'apiserver_request_total_x{verb="POST",resource="pods"} 9\n')
    text = AFTER + lookalike
    kept = apimetrics.only_metrics(text, apimetrics.METRIC)
    assert "apiserver_request_duration_seconds" not in kept
    assert "apiserver_request_total_x" not in kept
    assert kept.count("\napiserver_request_total{") == 7
    full = [s for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == apimetrics.METRIC]
    assert len(full) == 7
    assert sum(apimetrics.request_counts(text).values()) == sum(
        s.value for s in full if s.labels["resource"] not in ("", "tokenreviews"))
