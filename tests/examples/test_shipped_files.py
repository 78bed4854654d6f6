"""The files shipped for real clusters match what the code installs and runs (issue 15
items 3 and 8): examples/operator-config.yaml is the install's OperatorConfiguration, and
examples/cluster-topology.yaml is the topology `phalanx run` uses, covering every domain the
examples' constraints name."""

from __future__ import annotations

from phalanx.api.config import load_operator_config
from phalanx.api.grove import ClusterTopologyBinding, PodCliqueSet
from phalanx.api.grove_topology import effective_topology_errors
from phalanx.api.loader import load_file
from phalanx.manifests.install import install_config
from phalanx.sim.clusterspec import default_cluster_spec
from phalanx.sim.runner import DEFAULT_TOPOLOGY_NAME

from .helpers import EXAMPLES


def test_the_example_operator_config_is_the_installed_one() -> None:
    assert load_operator_config(EXAMPLES / "operator-config.yaml") == install_config(True)


def test_the_example_cluster_topology_is_the_embedded_one_and_covers_the_examples() -> None:
    [topology] = load_file(EXAMPLES / "cluster-topology.yaml")
    assert isinstance(topology, ClusterTopologyBinding)
    assert topology.name == DEFAULT_TOPOLOGY_NAME
    assert [(lv.domain, lv.key) for lv in topology.spec.levels] == [
        (t.domain, t.key) for t in default_cluster_spec().spec.topology]
    wanted: set[str] = set()
    for f in EXAMPLES.glob("*.yaml"):
        text = f.read_text()
        for domain in topology.domains():
            if f"required: {domain}" in text or f"preferred: {domain}" in text:
                wanted.add(domain)
        # Grove's current API: no deprecated packDomain, every constraint names this
        # binding (written or inherited), every clique has its roleName.
        assert "packDomain" not in text, f.name
        for obj in load_file(f) if "kind: PodCliqueSet" in text else ():
            if isinstance(obj, PodCliqueSet):
                assert obj.spec.template.cliques
                assert all(c.spec.role_name for c in obj.spec.template.cliques)
                name, errors = effective_topology_errors(obj)
                assert not errors, (f.name, errors)
                assert name in (None, topology.name), (f.name, name)
    assert {"block", "rack"} <= wanted <= set(topology.domains())
