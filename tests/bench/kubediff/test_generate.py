"""The kubediff case generator (no server): deterministic per seed, features gated, and the
shapes the API server insists on."""

import json

import pytest

from phalanx.bench.kubediff import features as F
from phalanx.bench.kubediff.generate import (
    CASE_LABEL,
    EXISTING_SCHEDULER,
    GPU,
    NODE_LABEL,
    generate_case,
    generate_cases,
)
from phalanx.bench.kubediff.run import SELECTOR, TAINT, pin_method

SEEDS = range(300)


def _dump(case):
    return json.dumps(case.to_dict(), sort_keys=True)


def test_same_seed_same_case_and_seeds_differ():
    for seed in (0, 1, 17, 123456):
        once, again = generate_case(seed, F.ALL_FEATURES), generate_case(seed, F.ALL_FEATURES)
        assert _dump(once) == _dump(again)
    dumps = {_dump(generate_case(s, F.ALL_FEATURES, prefix="kd")) for s in range(50)}
    assert len(dumps) == 50


def test_generate_cases_are_the_single_seeds():
    cases = generate_cases(40, 3, F.BASE_FEATURES, prefix="x")
    assert [c.seed for c in cases] == [40, 41, 42]
    assert _dump(cases[1]) == _dump(generate_case(41, F.BASE_FEATURES, "x41"))


def _walk(obj, key):
    """Every value stored under `key` anywhere in obj."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                yield v
            yield from _walk(v, key)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v, key)


def _required_pod_terms(case_dict):
    return [t for kind in ("podAffinity", "podAntiAffinity") for a in _walk(case_dict, kind)
            for t in a.get("requiredDuringSchedulingIgnoredDuringExecution", ())]


@pytest.mark.parametrize("feature, found", [
    (F.SPREAD, lambda c: list(_walk(c, "topologySpreadConstraints"))),
    (F.HOST_PORTS, lambda c: list(_walk(c, "hostPort"))),
    (F.VOLUMES, lambda c: list(_walk(c, "persistentVolumeClaim"))),
    (F.MATCH_LABEL_KEYS, lambda c: list(_walk(c, "matchLabelKeys"))
     + list(_walk(c, "mismatchLabelKeys"))),
    (F.TAINTS, lambda c: list(_walk(c, "taints")) + list(_walk(c, "tolerations"))),
    (F.UNSCHEDULABLE, lambda c: list(_walk(c, "unschedulable"))),
    (F.POD_AFFINITY, _required_pod_terms),
    (F.PREFERRED, lambda c: list(_walk(c, "preferredDuringSchedulingIgnoredDuringExecution"))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_feature_appears_only_when_enabled(feature, found):
    without = tuple(f for f in F.ALL_FEATURES if f != feature)
    seen_with = 0
    for seed in SEEDS:
        assert not found(generate_case(seed, without).to_dict()), seed
        case = generate_case(seed, F.ALL_FEATURES)
        assert set(case.uses) <= set(case.features)
        found_here = bool(found(case.to_dict()))
        seen_with += found_here
        if found_here:
            assert feature in case.uses, seed
    assert seen_with >= 10  # the feature is exercised often enough to matter


def test_every_feature_is_exercised_and_both_verdicts_are_plausible():
    used = {f for s in SEEDS for f in generate_case(s, F.ALL_FEATURES).uses}
    assert used == set(F.ALL_FEATURES)


def test_nodes_and_existing_pods_are_well_formed():
    for seed in SEEDS:
        case = generate_case(seed, F.ALL_FEATURES, prefix=f"p{seed}")
        names = case.node_names
        assert 1 <= len(names) <= 16 and len(set(names)) == len(names)
        for node in case.nodes:
            labels = node["metadata"]["labels"]
            assert labels[CASE_LABEL] == f"p{seed}"
            assert labels[NODE_LABEL] == node["metadata"]["name"]
            keys = [(t["key"], t["effect"]) for t in node["spec"].get("taints", ())]
            assert len(keys) == len(set(keys))
        for pod in case.existing:
            assert pod["spec"]["nodeName"] in names
            assert pod["spec"]["schedulerName"] == EXISTING_SCHEDULER
            assert pod["metadata"]["labels"][CASE_LABEL] == f"p{seed}"


def test_the_pod_satisfies_api_validation_rules_kube_apiserver_enforces():
    for seed in SEEDS:
        spec = generate_case(seed, F.ALL_FEATURES).pod["spec"]
        for c in spec["containers"] + spec.get("initContainers", []):
            res = c.get("resources", {})
            if GPU in res.get("requests", {}):  # extended resources: limits == requests
                assert res["limits"][GPU] == res["requests"][GPU]
        for t in spec.get("tolerations", ()):
            assert t.get("key") or t["operator"] == "Exists"
            assert t["operator"] != "Exists" or "value" not in t
        affinity = spec.get("affinity", {}).get("nodeAffinity", {})
        required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        for term in (required or {}).get("nodeSelectorTerms", ()):
            assert term.get("matchExpressions") or term.get("matchFields")
            for f in term.get("matchFields", ()):
                assert f["key"] == "metadata.name" and len(f["values"]) == 1
            for e in term.get("matchExpressions", ()):
                if e["operator"] in ("Exists", "DoesNotExist"):
                    assert "values" not in e
                elif e["operator"] in ("Gt", "Lt"):
                    assert len(e["values"]) == 1 and e["values"][0].isdigit()
                else:
                    assert e["values"]
        pairs = [(c["topologyKey"], c["whenUnsatisfiable"])
                 for c in spec.get("topologySpreadConstraints", ())]
        assert len(pairs) == len(set(pairs))
        for c in spec.get("topologySpreadConstraints", ()):
            assert "minDomains" not in c or c["whenUnsatisfiable"] == "DoNotSchedule"


def test_pod_named_is_a_copy_with_name_and_scheduler():
    case = generate_case(3, F.ALL_FEATURES)
    pod = case.pod_named("x", "sched")
    assert (pod["metadata"]["name"], pod["spec"]["schedulerName"]) == ("x", "sched")
    pod["spec"]["containers"].clear()
    assert case.pod["spec"]["containers"] and "schedulerName" not in case.pod["spec"]


def test_pin_by_selector_unless_spread_honours_node_affinity():
    case = generate_case(3, F.BASE_FEATURES)
    spec = case.pod["spec"]
    spec.pop("tolerations", None)
    assert pin_method(case) == (SELECTOR, "")
    spec["topologySpreadConstraints"] = [{"nodeAffinityPolicy": "Ignore"}]
    assert pin_method(case) == (SELECTOR, "")
    spec["topologySpreadConstraints"].append({"maxSkew": 1})  # Honor by default
    assert pin_method(case) == (TAINT, "")
    spec["tolerations"] = [{"operator": "Exists"}]
    assert pin_method(case)[0] == "" and "tolerates every taint" in pin_method(case)[1]
    spec["tolerations"] = [{"key": "spot", "operator": "Exists"}]
    assert pin_method(case) == (TAINT, "")
    spec["topologySpreadConstraints"][1]["nodeTaintsPolicy"] = "Honor"
    assert pin_method(case)[0] == "" and "node affinity and taints" in pin_method(case)[1]


def test_prefix_is_bounded():
    with pytest.raises(ValueError, match="longer than 40"):
        generate_case(1, prefix="x" * 41)


@pytest.mark.parametrize("text, expected", [
    ("all", F.ALL_FEATURES),
    ("taints, resources", (F.RESOURCES, F.TAINTS)),
])
def test_parse_features(text, expected):
    assert F.parse_features(text) == expected


def test_parse_features_names_the_unknown_one():
    with pytest.raises(ValueError, match="unknown feature.*spreading"):
        F.parse_features("taints,spreading")


def test_auto_features_follow_the_registered_plugins():
    from phalanx.scheduler.framework.registry import get_plugin

    auto = F.available_features()
    assert set(F.BASE_FEATURES) | set(F.SERVER_SIDE) <= set(auto)
    for feature, plugin in F.PLUGIN_OF.items():
        assert (feature in auto) == (get_plugin(plugin) is not None), feature
    assert F.parse_features("auto") == auto == F.ordered(auto)


def test_dra_cases_claim_devices_on_a_driver_per_placement():
    from phalanx.api.resource import DeviceClass, ResourceClaim, ResourceSlice
    from phalanx.bench.kubediff.draparts import CLAIM, DRIVER, DRIVERS, driver_names
    from phalanx.bench.kubediff.world import _on_driver, dra_objects

    cases = [generate_case(s, (F.RESOURCES, F.DRA)) for s in SEEDS]
    with_claim = [c for c in cases if c.claim is not None]
    assert 0.3 * len(cases) < len(with_claim) < 0.7 * len(cases)
    assert all(F.DRA in c.uses for c in with_claim)
    shapes = {("exactly" in r, "firstAvailable" in r, "constraints" in c.claim["devices"])
              for c in with_claim for r in c.claim["devices"]["requests"]}
    assert shapes == {(True, False, False), (True, False, True), (False, True, False)}
    for case in with_claim:
        assert case.pod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimName": CLAIM}]
        drivers = driver_names(case.prefix)
        assert len(set(drivers)) == DRIVERS
        objs = dra_objects(case)
        assert len(objs) == DRIVERS * (1 + len(case.devices))
        for obj in objs:  # what the API server would be sent parses as our kinds
            kind = DeviceClass if obj["kind"] == "DeviceClass" else ResourceSlice
            kind.model_validate(obj)
        spec = _on_driver(case.claim, drivers[1])
        assert DRIVER not in json.dumps(spec) and drivers[1] in json.dumps(spec)
        ResourceClaim.model_validate({"metadata": {"name": "c", "namespace": "n"}, "spec": spec})
    # Without the feature nothing of DRA is generated.
    for s in range(20):
        plain = generate_case(s, (F.RESOURCES,))
        assert plain.claim is None and not plain.devices and dra_objects(plain) == []
