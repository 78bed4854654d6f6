from pathlib import Path

import pytest

from phalanx.api.errors import ManifestError
from phalanx.api.grove import (
    ClusterTopology,
    ClusterTopologyBinding,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueSet,
    PodGang,
    default_podcliqueset,
)
from phalanx.api.loader import _Loader, dump_yaml, load_file, load_yaml
from phalanx.api.grove_topology import effective_topology_errors
from phalanx.api.registry import from_dict, resolve

SAMPLES = sorted((Path(__file__).parent / "samples").glob("*.yaml"))


def _raw(path: Path):
    import yaml

    return [d for d in yaml.load_all(path.read_text(), Loader=_Loader) if d is not None]


def test_three_samples_exist():
    assert [p.name for p in SAMPLES] == [
        "disaggregated-prefill-decode.yaml",
        "multinode-leader-worker.yaml",
        "single-node-aggregated.yaml",
    ]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_sample_round_trips(path):
    objs = load_file(path)
    assert len(objs) == 1 and isinstance(objs[0], PodCliqueSet)
    # dump equals the input, field for field
    assert [o.to_dict() for o in objs] == _raw(path)
    # load -> dump -> load is the same object
    again = load_yaml(dump_yaml(objs))
    assert again == objs


def test_disaggregated_sample_fields():
    (pcs,) = load_file(SAMPLES[0])
    t = pcs.spec.template
    assert t.clique_startup_type == "CliqueStartupTypeExplicit"
    assert pcs.termination_delay_seconds() == 1800
    prefill = pcs.clique("prefill")
    assert prefill.spec.min_available == 2 and prefill.spec.starts_after == ["frontend"]
    assert prefill.spec.auto_scaling_config.max_replicas == 8
    decode_pod = pcs.clique("decode").spec.pod_spec
    term = decode_pod.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    ops = [e.operator for e in term.node_selector_terms[0].match_expressions]
    assert ops == ["Gt", "DoesNotExist"]
    assert decode_pod.scheduler_name == "kai-scheduler"
    assert pcs.standalone_cliques() == t.cliques


def test_multinode_sample_scaling_group_and_topology():
    (pcs,) = load_file(SAMPLES[1])
    group = pcs.scaling_group_of("worker")
    assert group is pcs.scaling_group_of("leader") and group.name == "inference"
    assert (group.replicas, group.min_available) == (3, 2)
    assert group.topology_constraint.required_domain == "rack"
    assert pcs.spec.template.topology_constraint.required_domain == "zone"
    assert pcs.standalone_cliques() == []
    worker = pcs.clique("worker").spec.pod_spec
    # the init container runs alone, so the pod asks for the app's resources
    from phalanx.api.core import Pod

    pod = Pod(spec=worker)
    assert pod.resource_requests()["nvidia.com/gpu"] == 8
    assert "\n" in pcs.clique("leader").spec.pod_spec.containers[0].args[0]
    assert "args:\n            - |" in dump_yaml(pcs)


def test_defaulting_fills_only_what_is_unset():
    (pcs,) = load_file(SAMPLES[1])
    pcs.spec.template.pod_clique_scaling_groups[0].min_available = None
    default_podcliqueset(pcs)
    t = pcs.spec.template
    assert t.clique_startup_type == "CliqueStartupTypeInOrder"  # kept
    assert t.termination_delay == "4h"
    assert t.headless_service_config.publish_not_ready_addresses is True
    assert t.pod_clique_scaling_groups[0].min_available == 1
    assert t.pod_clique_scaling_groups[0].replicas == 3
    assert [c.spec.min_available for c in t.cliques] == [1, 1]
    assert pcs.spec.update_strategy.type == "RollingRecreate"
    (fresh,) = load_file(SAMPLES[2])
    fresh.spec.template.termination_delay = None
    default_podcliqueset(fresh)
    assert fresh.spec.template.clique_startup_type == "CliqueStartupTypeAnyOrder"
    assert fresh.termination_delay_seconds() == 4 * 3600


def test_pack_constraint_new_spelling():
    pcs = load_yaml(SAMPLES[2].read_text())[0]
    from phalanx.api.grove import TopologyConstraint

    tc = TopologyConstraint.model_validate({"pack": {"required": "rack", "preferred": "host"}})
    assert (tc.required_domain, tc.preferred_domain) == ("rack", "host")
    assert pcs.spec.template.topology_constraint is None


def test_cluster_topology():
    ct = from_dict(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "ClusterTopology",
            "metadata": {"name": "default"},
            "spec": {
                "levels": [
                    {"domain": "zone", "key": "topology.kubernetes.io/zone"},
                    {"domain": "rack", "key": "topology.kubernetes.io/rack"},
                    {"domain": "host", "key": "kubernetes.io/hostname"},
                ]
            },
        }
    )
    assert isinstance(ct, ClusterTopology) and not ct.NAMESPACED
    assert ct.key_for("rack") == "topology.kubernetes.io/rack" and ct.key_for("numa") is None
    assert ct.domains() == ["zone", "rack", "host"]


def test_podclique_and_scaling_group_status_counters_omitted_when_zero():
    pclq = PodClique.model_validate(
        {
            "metadata": {"name": "pcs-0-worker"},
            "spec": {"roleName": "a", "replicas": 2,
                     "podSpec": {"containers": [{"name": "a"}]}},
        }
    )
    assert "status" not in pclq.to_dict()
    pclq.status.scheduled_replicas = 2
    pclq.status.hpa_pod_selector = "grove.io/podclique=pcs-0-worker"
    assert pclq.to_dict()["status"] == {
        "scheduledReplicas": 2,
        "hpaPodSelector": "grove.io/podclique=pcs-0-worker",
    }
    pcsg = PodCliqueScalingGroup.model_validate(
        {"metadata": {"name": "pcs-0-inference"}, "spec": {"replicas": 3, "cliqueNames": ["a"]}}
    )
    assert pcsg.spec.min_available is None and pcsg.HAS_STATUS


def test_podgang_wire_names_and_helpers():
    data = {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "pcs-0", "namespace": "default"},
        "spec": {
            "podgroups": [
                {
                    "name": "pcs-0-leader",
                    "podReferences": [{"namespace": "default", "name": "pcs-0-leader-0"}],
                    "minReplicas": 1,
                },
                {
                    "name": "pcs-0-worker",
                    "podReferences": [
                        {"namespace": "default", "name": "pcs-0-worker-0"},
                        {"namespace": "default", "name": "pcs-0-worker-1"},
                    ],
                    "minReplicas": 2,
                    "topologyConstraint": {
                        "packConstraint": {"required": "topology.kubernetes.io/rack"}
                    },
                },
            ],
            "topologyConstraint": {"packConstraint": {"preferred": "kubernetes.io/hostname"}},
            "priorityClassName": "high",
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "Initialized", "status": "True", "reason": "Ready", "message": ""}
            ],
        },
    }
    gang = from_dict(data)
    assert isinstance(gang, PodGang) and gang.to_dict() == data
    assert gang.min_member() == 3 and gang.is_initialized and not gang.is_scheduled
    assert gang.pod_names() == ["pcs-0-leader-0", "pcs-0-worker-0", "pcs-0-worker-1"]
    assert gang.group("pcs-0-worker").topology_constraint.pack_constraint.required.endswith("rack")


def test_cluster_topology_binding_is_groves_current_api():
    ct = from_dict({
        "apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding",
        "metadata": {"name": "grove-topology"},
        "spec": {"levels": [{"domain": "zone", "key": "topology.kubernetes.io/zone"},
                            {"domain": "host", "key": "kubernetes.io/hostname"}],
                 "schedulerTopologyBindings": [{"schedulerName": "kai-scheduler",
                                                "topologyReference": "kai-zone-host"}]},
        "status": {"observedGeneration": 2, "schedulerTopologyStatuses": [
            {"schedulerName": "kai-scheduler", "topologyReference": "kai-zone-host",
             "inSync": False, "message": "levels differ"}]},
    })
    assert isinstance(ct, ClusterTopologyBinding) and not ct.NAMESPACED and ct.HAS_STATUS
    assert ct.domains() == ["zone", "host"] and ct.key_for("host") == "kubernetes.io/hostname"
    assert ct.spec.binding_for("kai-scheduler").topology_reference == "kai-zone-host"
    assert ct.spec.binding_for("volcano") is None
    # `ct` is the binding's short name; the legacy kind has none (no clash between them).
    assert resolve("ct") is ClusterTopologyBinding and ClusterTopology.SHORT_NAMES == ()


@pytest.mark.parametrize(("kind", "path", "value"), [
    ("PodClique", ["status", "lastScheduled"], "2026-01-01T00:00:00Z"),
    ("PodGang", ["status", "lastScheduled"], "2026-01-01T00:00:00Z"),
    ("PodGang", ["status", "lastReady"], "2026-01-01T00:00:00Z"),
    ("PodCliqueSet", ["status", "currentRevision"], "abc"),
    ("PodCliqueSet", ["spec", "template", "cliques", 0, "rollingUpdate"], {}),
    ("PodCliqueSet", ["spec", "template", "podCliqueScalingGroups", 0, "rollingUpdate"], {}),
    ("PodCliqueSet", ["spec", "template", "podCliqueScalingGroups", 0, "terminationDelay"], "1m"),
])
def test_fields_grove_does_not_have_are_unknown(kind: str, path: list, value: object):
    """Only what Grove's schema holds is modelled: these fields (Phalanx's once, or Grove's
    before it removed them) get the "unknown field" error naming them."""
    clique = {"name": "a", "spec": {"roleName": "a", "replicas": 1,
                                    "podSpec": {"containers": [{"name": "c"}]}}}
    objects = {
        "PodCliqueSet": {"spec": {"template": {
            "cliques": [clique], "podCliqueScalingGroups": [{"name": "g", "cliqueNames": ["a"]}]}}},
        "PodClique": {"spec": clique["spec"]},
        "PodGang": {"apiVersion": "scheduler.grove.io/v1alpha1", "spec": {"podgroups": []}},
    }
    data = {"apiVersion": "grove.io/v1alpha1", "kind": kind, "metadata": {"name": "x"},
            **objects[kind]}
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[path[-1]] = value
    with pytest.raises(ManifestError) as err:
        from_dict(data)
    field = ".".join(str(p) for p in path).replace(".0.", "[0].")
    assert f"{field}: unknown field" in str(err.value)


def test_a_topology_name_is_written_or_inherited_never_guessed():
    def pcs(**constraints: object) -> PodCliqueSet:
        t: dict = {"cliques": [{"name": "a", "spec": {
            "roleName": "a", "replicas": 1, "podSpec": {"containers": [{"name": "c"}]}}}],
            "podCliqueScalingGroups": [{"name": "g", "cliqueNames": ["a"]}]}
        if "top" in constraints:
            t["topologyConstraint"] = constraints["top"]
        if "group" in constraints:
            t["podCliqueScalingGroups"][0]["topologyConstraint"] = constraints["group"]
        if "clique" in constraints:
            t["cliques"][0]["topologyConstraint"] = constraints["clique"]
        return PodCliqueSet.model_validate({"metadata": {"name": "p"}, "spec": {"template": t}})

    rack = {"pack": {"required": "rack"}}
    assert effective_topology_errors(pcs()) == (None, [])
    assert effective_topology_errors(pcs(top={"topologyName": "t", **rack}, clique=rack)) == (
        "t", [])
    assert effective_topology_errors(pcs(group={"topologyName": "g", **rack}, clique=rack))[0] \
        == "g"  # a scaling group's name reaches its cliques
    name, errors = effective_topology_errors(pcs(clique=rack))
    assert name is None and [e.field for e in errors] == [
        "spec.template.cliques[0].topologyConstraint.topologyName"] and errors[0].missing
    name, errors = effective_topology_errors(pcs(top={"topologyName": "t", **rack},
                                                 group={"topologyName": "u", **rack}))
    assert [e.field for e in errors] == [
        "spec.template.podCliqueScalingGroups[0].topologyConstraint.topologyName"]
