"""Decoding real API-server JSON into Phalanx models, and the merge patches updates send."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.pod import Pod
from phalanx.cluster.kube.convert import BaseCache, decode, merge_patch, prune
from phalanx.cluster.objects import merge_patch as apply_merge_patch


def server_pod() -> dict[str, Any]:
    """A pod as kube-apiserver returns it: defaulted fields and managedFields included."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "w-0",
            "namespace": "default",
            "uid": "5d0b",
            "resourceVersion": "812",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"grove.io/podgang": "g"},
            "managedFields": [{"manager": "phalanx", "operation": "Update"}],
            "selfLink": "/api/v1/namespaces/default/pods/w-0",
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "terminationMessagePath": "/dev/termination-log",
                    "someFutureField": {"x": 1},
                }
            ],
            "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": []}}],
            "dnsPolicy": "ClusterFirst",
            "aBrandNewPodField": True,
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort", "unknownStatus": 3},
    }


def test_prune_drops_only_what_the_model_does_not_declare() -> None:
    pruned = prune(Pod, server_pod())
    assert "managedFields" not in pruned["metadata"]
    assert "selfLink" not in pruned["metadata"]
    assert "aBrandNewPodField" not in pruned["spec"]
    assert "someFutureField" not in pruned["spec"]["containers"][0]
    assert "unknownStatus" not in pruned["status"]
    # Declared fields, including opaque dicts, are kept whole.
    assert pruned["spec"]["volumes"][0]["projected"] == {"sources": []}
    assert pruned["spec"]["dnsPolicy"] == "ClusterFirst"
    assert pruned["metadata"]["labels"] == {"grove.io/podgang": "g"}


def test_decode_real_server_pod() -> None:
    pod = decode(Pod, server_pod())
    assert pod.metadata.resource_version == "812"
    assert pod.spec.scheduling_gates[0].name == "grove.io/podgang-pending-creation"
    assert pod.spec.containers[0].termination_message_path == "/dev/termination-log"


def test_merge_patch_of_a_gate_removal_touches_only_the_gates() -> None:
    old = decode(Pod, server_pod())
    new = old.copy_deep()
    new.spec.scheduling_gates = []
    new.metadata.labels["grove.io/podclique"] = "c"
    patch = merge_patch(old.to_dict(), new.to_dict())
    assert patch == {
        "metadata": {"labels": {"grove.io/podclique": "c"}},
        "spec": {"schedulingGates": None},
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=2), children, max_size=3),
    max_leaves=12,
)
# Merge patches cannot express null values inside objects (null means delete).
no_null_dicts = st.dictionaries(
    st.text(max_size=2), json_values.filter(lambda v: v is not None), max_size=4
)


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    return value


@given(no_null_dicts, no_null_dicts)
def test_merge_patch_round_trips(old: dict[str, Any], new: dict[str, Any]) -> None:
    old, new = _strip_nulls(old), _strip_nulls(new)
    assert apply_merge_patch(old, merge_patch(old, new)) == new


def test_base_cache_is_bounded_lru() -> None:
    cache = BaseCache(capacity=2)
    for i in range(3):
        cache.put({"metadata": {"uid": f"u{i}", "resourceVersion": "1"}})
    assert cache.get("u0", "1") is None
    assert cache.get("u2", "1") is not None
    assert len(cache) == 2


def test_base_cache_keeps_one_version_per_object_and_forgets_deleted_ones() -> None:
    cache = BaseCache(capacity=10)
    for rv in range(1, 6):  # five versions of one object: only the newest is kept
        cache.put({"metadata": {"uid": "u", "resourceVersion": str(rv)}})
    assert len(cache) == 1
    assert cache.get("u", "4") is None and cache.get("u", "5") is not None
    cache.discard("u")
    assert cache.get("u", "5") is None and len(cache) == 0


def test_a_decoded_model_shares_no_container_with_the_servers_json() -> None:
    # KubeCluster.decode caches the server's JSON as the merge-patch base and hands out a
    # model of the pruned form: they must be independent, opaque dicts included (pydantic
    # builds its own containers for typed fields; prune copies what a model would hold by
    # reference).
    data = server_pod()

    def containers(value, out):
        if isinstance(value, dict | list):
            out.add(id(value))
            for v in value.values() if isinstance(value, dict) else value:
                containers(v, out)
        elif hasattr(value, "__pydantic_fields__"):
            for name in type(value).model_fields:
                containers(getattr(value, name), out)
            containers(value.__pydantic_extra__ or {}, out)
        return out

    pod = Pod.model_validate(prune(Pod, data))
    assert not containers(pod, set()) & containers(data, set())
    pod.spec.volumes[0]["projected"]["sources"].append({"x": 1})
    assert data["spec"]["volumes"][0]["projected"] == {"sources": []}


def test_lenient_decode_gives_the_pruned_decode() -> None:
    """decode_lenient (validation that ignores unknown fields) and decode_list (a whole list
    response from raw JSON) give the same models as prune + validate; kinds with a model that
    keeps unknown fields are not decoded that way."""
    import json

    from phalanx.api.core import Node
    from phalanx.cluster.kube.convert import decode_lenient, decode_list, lenient_decodable

    pod = server_pod()
    node = {"metadata": {"name": "n1", "uid": "u", "resourceVersion": "7",
                         "managedFields": [{"manager": "kubelet"}], "labels": {"a": "b"}},
            "spec": {"podCIDR": "10.0.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule",
                                                           "someNewField": 1}]},
            "status": {"allocatable": {"cpu": "128", "nvidia.com/gpu": "8"},
                       "images": [{"names": ["x"], "sizeBytes": 1}], "unknownStatus": {}}}
    # Nested models already built (their own strict validators exist) must not matter.
    decode(Pod, server_pod())
    decode(Node, json.loads(json.dumps(node)))
    assert decode_lenient(Pod, server_pod()) == decode(Pod, pod)
    assert decode_lenient(Node, json.loads(json.dumps(node))) == decode(Node, node)
    raw = json.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9", "continue": "c"},
                      "items": [server_pod(), server_pod()]}).encode()
    items, meta = decode_list(Pod, raw)
    assert items == [decode(Pod, server_pod())] * 2
    assert meta == {"resourceVersion": "9", "continue": "c"}
    assert decode_list(Pod, b'{"metadata": {}, "items": null}') == ([], {})
    assert lenient_decodable(Pod) and lenient_decodable(Node)

    class Loose(Pod):
        model_config = {**Pod.model_config, "extra": "allow"}

    assert not lenient_decodable(Loose)
    loose = {**server_pod(), "extraField": 1}
    kept = decode_lenient(Loose, json.loads(json.dumps(loose)))
    assert kept == decode(Loose, loose) and kept.model_extra == {"extraField": 1}


# --- status writes: the status alone is decoded and compared ------------------------------

def _full_status_patch(kind: type, base: dict[str, Any], obj: Any) -> Any:
    """What a status write sent before: both whole objects normalised, their statuses diffed."""
    old = kind.model_validate(prune(kind, base)).to_dict().get("status") or {}
    return merge_patch(old, obj.to_dict(warnings=False).get("status") or {})


def _status_only_patch(kind: type, base: dict[str, Any], obj: Any) -> Any:
    from phalanx.cluster.kube.convert import dumped, normalized

    return merge_patch(normalized(kind, base, status_only=True)["status"],
                       dumped(obj, status_only=True)["status"])


def _podclique(status: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "apiVersion": "grove.io/v1alpha1", "kind": "PodClique",
        "metadata": {"name": "s-0-w", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
                     "managedFields": [{"manager": "phalanx"}]},
        "spec": {"replicas": 2, "minAvailable": 2, "roleName": "w",
                 "podSpec": {"containers": [{"name": "c", "image": "busybox",
                                             "terminationMessagePath": "/dev/termination-log"}],
                             "dnsPolicy": "ClusterFirst"}},
    }
    if status is not None:
        data["status"] = status
    return data


_CONDITION = st.fixed_dictionaries({
    "type": st.sampled_from(["PodCliqueScheduled", "MinAvailableBreached"]),
    "status": st.sampled_from(["True", "False", "Unknown"]),
    "reason": st.sampled_from(["SufficientScheduledPods", "InsufficientReadyPods"]),
    "message": st.text(max_size=8),
    "lastTransitionTime": st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"]),
})
_PCLQ_STATUS = st.one_of(st.none(), st.fixed_dictionaries(
    {"replicas": st.integers(0, 4)},
    optional={"readyReplicas": st.integers(0, 4), "scheduledReplicas": st.integers(0, 4),
              "updatedReplicas": st.integers(0, 4), "observedGeneration": st.integers(1, 3),
              "hpaPodSelector": st.sampled_from(["a=b", "a=c"]),
              "conditions": st.lists(_CONDITION, max_size=2, unique_by=lambda c: c["type"]),
              "someFutureStatusField": st.integers()}))


@settings(deadline=None)  # pydantic's first validations of a model are slower
@given(_PCLQ_STATUS, _PCLQ_STATUS)
def test_a_status_write_sends_the_patch_the_whole_object_comparison_sent(
        before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
    from phalanx.api.grove import PodClique

    base = _podclique(before)
    obj = PodClique.model_validate(prune(PodClique, _podclique(after)))
    assert _status_only_patch(PodClique, base, obj) == _full_status_patch(PodClique, base, obj)


def test_a_pod_status_write_diffs_the_status_as_before() -> None:
    base = server_pod()
    obj = decode(Pod, server_pod())
    obj.status.phase = "Running"
    obj.status.conditions = [{"type": "Ready", "status": "True"}]  # type: ignore[list-item]
    patch = _status_only_patch(Pod, base, obj)
    assert patch == _full_status_patch(Pod, base, obj)
    assert patch["phase"] == "Running" and "unknownStatus" not in patch


def test_a_status_write_does_not_depend_on_decoding_the_spec() -> None:
    """A spec this client cannot decode (a value its model refuses) no longer fails a write
    of the status, which never touches it."""
    import pytest
    from pydantic import ValidationError

    from phalanx.api.grove import PodClique
    from phalanx.cluster.kube.convert import normalized

    base = _podclique({"replicas": 2})
    base["spec"]["replicas"] = "two"
    with pytest.raises(ValidationError):
        normalized(PodClique, base)
    assert normalized(PodClique, base, status_only=True) == {"status": {"replicas": 2}}


def test_kinds_without_a_status_model_are_compared_whole() -> None:
    from phalanx.api.core import ConfigMap
    from phalanx.cluster.kube.convert import dumped, normalized, status_model

    assert status_model(ConfigMap) is None
    data = {"metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "b"}}
    obj = ConfigMap.model_validate(data)
    assert normalized(ConfigMap, data, status_only=True) == obj.to_dict()
    assert dumped(obj, status_only=True) == obj.to_dict(warnings=False)
