import yaml

from phalanx.api.crds import GROVE_CRD_KINDS, crd_for, crds, crds_yaml
from phalanx.api.scheduling import KaiPodGroup

ALLOWED = {
    "type", "format", "description", "properties", "items", "required", "enum", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
    "minItems", "maxItems", "additionalProperties", "default", "anyOf",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
    "x-kubernetes-validations", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
}  # fmt: skip


def _walk(schema, path="$"):
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{name}")
    if "items" in schema:
        yield from _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{path}{{}}")


def test_yaml_loads_as_six_crds():
    docs = list(yaml.safe_load_all(crds_yaml()))
    assert [d["metadata"]["name"] for d in docs] == [
        "podcliquesets.grove.io",
        "podcliques.grove.io",
        "podcliquescalinggroups.grove.io",
        "clustertopologybindings.grove.io",
        "clustertopologies.grove.io",  # legacy input
        "podgangs.scheduler.grove.io",
    ]
    assert all(d["apiVersion"] == "apiextensions.k8s.io/v1" for d in docs)


def test_schemas_are_structural():
    for crd in crds():
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert "$ref" not in yaml.safe_dump(schema)
        assert "$defs" not in schema
        for path, node in _walk(schema):
            assert set(node) <= ALLOWED, (crd["metadata"]["name"], path, set(node) - ALLOWED)
            has_type = "type" in node
            assert has_type or node.get("x-kubernetes-int-or-string"), (path, node)
            if node.get("type") == "object" and "properties" in node:
                assert "additionalProperties" not in node, path
            if "anyOf" in node:
                assert node.get("x-kubernetes-int-or-string") is True
                assert all(set(o) == {"type"} for o in node["anyOf"])


def test_camel_case_and_opaque_fields():
    crd = crd_for(GROVE_CRD_KINDS[0])
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    template = spec["properties"]["template"]["properties"]
    assert "podCliqueScalingGroups" in template and "terminationDelay" in template
    clique = template["cliques"]["items"]["properties"]["spec"]["properties"]
    pod_spec = clique["podSpec"]
    assert pod_spec["x-kubernetes-preserve-unknown-fields"] is True  # newer PodSpec fields survive
    # No schema default: an unset schedulerName must reach the operator unset (it means the
    # default profile, which need not be default-scheduler).
    assert "default" not in pod_spec["properties"]["schedulerName"]
    container = pod_spec["properties"]["containers"]["items"]["properties"]
    assert container["readinessProbe"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    requests = container["resources"]["properties"]["requests"]
    assert requests["additionalProperties"]["x-kubernetes-int-or-string"] is True
    assert pod_spec["properties"]["hostPID"]["type"] == "boolean"


def test_subresources_scope_and_columns():
    by_kind = {c["spec"]["names"]["kind"]: c for c in crds()}
    pcs = by_kind["PodCliqueSet"]["spec"]
    assert pcs["scope"] == "Namespaced" and pcs["names"]["shortNames"] == ["pcs"]
    version = pcs["versions"][0]
    assert version["subresources"]["status"] == {}
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.hpaPodSelector",
    }
    assert [c["name"] for c in version["additionalPrinterColumns"]][:2] == ["Replicas", "Available"]
    assert by_kind["ClusterTopology"]["spec"]["scope"] == "Cluster"
    assert "subresources" not in by_kind["ClusterTopology"]["spec"]["versions"][0]
    # Grove's ClusterTopologyBinding holds the short name `ct`; the legacy kind has none, so
    # both CRDs are Established side by side (no ShortNamesConflict).
    assert "shortNames" not in by_kind["ClusterTopology"]["spec"]["names"]
    binding = by_kind["ClusterTopologyBinding"]["spec"]
    assert binding["scope"] == "Cluster" and binding["names"]["shortNames"] == ["ct"]
    assert binding["versions"][0]["subresources"] == {"status": {}}
    assert by_kind["PodGang"]["spec"]["group"] == "scheduler.grove.io"
    assert "scale" in by_kind["PodCliqueScalingGroup"]["spec"]["versions"][0]["subresources"]


def test_any_registered_kind_can_get_a_crd():
    crd = crd_for(KaiPodGroup)
    assert crd["metadata"]["name"] == "podgroups.scheduling.run.ai"
