from phalanx.bench.kube import apimetrics
from phalanx.bench.kube.apimetrics import RequestKey

BEFORE = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 1
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="authentication.k8s.io",resource="tokenreviews",scope="cluster",subresource="",verb="POST",version="v1"} 1
# HELP apiserver_request_duration_seconds x
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",le="0.05"} 3
"""

AFTER = BEFORE.replace('verb="POST",version="v1"} 10', 'verb="POST",version="v1"} 110') \
    .replace('subresource="",verb="POST",version="v1"} 4', 'subresource="",verb="POST",version="v1"} 104') \
    .replace('verb="GET",version=""} 7', 'verb="GET",version=""} 70') \
    .replace('verb="POST",version="v1"} 1\n', 'verb="POST",version="v1"} 5\n') + (
        'apiserver_request_total{code="409",component="apiserver",dry_run="",group="",'
        'resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 3\n'
        'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",'
        'resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 2\n')


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
