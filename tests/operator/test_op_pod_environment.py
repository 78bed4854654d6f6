"""Grove's pod environment: its variables prepended in Grove's order, replacing user
variables of the same name (Grove's PrependEnvVarsToContainers and addEnvironmentVariables
tests, ported), with fieldRefs where Grove uses them."""

from __future__ import annotations

from op_harness import NS, Env, make_pcs, run

from phalanx.api import labels as L
from phalanx.api.core import EnvVar
from phalanx.operator.builders import prepend_env
from tests.podnames import hostname

POD_VARS = [L.ENV_PCS_NAME, L.ENV_PCS_INDEX, L.ENV_PCLQ_NAME, L.ENV_HEADLESS_SERVICE,
            L.ENV_PCLQ_POD_INDEX]
PCSG_VARS = [L.ENV_PCSG_NAME, L.ENV_PCSG_TEMPLATE_NUM_PODS, L.ENV_PCSG_INDEX]


def test_prepend_env_vars_to_containers() -> None:
    # add to empty containers
    spec = {"containers": [{"name": "c1"}, {"name": "c2"}]}
    prepend_env(spec, [{"name": "VAR1", "value": "value1"}, {"name": "VAR2", "value": "v2"}])
    assert [len(c["env"]) for c in spec["containers"]] == [2, 2]
    assert spec["containers"][0]["env"][0] == {"name": "VAR1", "value": "value1"}
    # prepend to containers with existing env
    spec = {"containers": [{"name": "c1", "env": [
        {"name": "EXISTING", "value": "existing-value"},
        {"name": "DERIVED", "value": "$(NEW_VAR)-derived"}]}]}
    prepend_env(spec, [{"name": "NEW_VAR", "value": "new-value"}])
    assert spec["containers"][0]["env"] == [
        {"name": "NEW_VAR", "value": "new-value"},
        {"name": "EXISTING", "value": "existing-value"},
        {"name": "DERIVED", "value": "$(NEW_VAR)-derived"}]
    # replace existing variables
    spec = {"initContainers": [{"name": "c1", "env": [
        {"name": "INJECTED", "value": "stale-value"},
        {"name": "EXISTING", "value": "existing-value"}]}]}
    prepend_env(spec, [{"name": "INJECTED", "value": "injected-value"}])
    assert spec["initContainers"][0]["env"] == [
        {"name": "INJECTED", "value": "injected-value"},
        {"name": "EXISTING", "value": "existing-value"}]
    # add empty env vars; no containers
    spec = {"containers": [{"name": "c1"}]}
    prepend_env(spec, [])
    assert spec["containers"][0]["env"] == []
    prepend_env({"containers": []}, [{"name": "VAR1", "value": "value1"}])


def _env(pod, container: str = "main") -> list[EnvVar]:
    return next(c for c in pod.spec.containers if c.name == container).env


def test_add_environment_variables() -> None:
    """A standalone clique's pod: Grove's five variables first, in Grove's order, the pod
    index from the pod's own label; the user's variables after them."""
    async def scenario(env: Env) -> None:
        pcs = make_pcs("envs", [("a", 2)])
        pcs.spec.template.cliques[0].spec.pod_spec.containers[0].env = [
            EnvVar(name="PEER", value="$(GROVE_PCLQ_NAME)-0.$(GROVE_HEADLESS_SERVICE)")]
        await env.create(pcs)
        await env.settle()
        pod = next(p for p in await env.pods() if hostname(p) == "envs-0-a-1")
        names = [e.name for e in _env(pod)]
        assert names == [*POD_VARS, "PEER"]
        by = {e.name: e for e in _env(pod)}
        assert by[L.ENV_PCS_NAME].value == "envs" and by[L.ENV_PCS_INDEX].value == "0"
        assert by[L.ENV_PCLQ_NAME].value == "envs-0-a"
        assert by[L.ENV_HEADLESS_SERVICE].value == f"envs-0.{NS}.svc.cluster.local"
        assert by[L.ENV_PCLQ_POD_INDEX].value_from["fieldRef"]["fieldPath"] == \
            f"metadata.labels['{L.LABEL_PODCLIQUE_POD_INDEX}']"
        assert pod.metadata.labels[L.LABEL_PODCLIQUE_POD_INDEX] == "1"

    run(scenario)


def test_add_grove_environment_variables_no_duplicates() -> None:
    """User variables named like Grove's are replaced, not duplicated (Grove #753)."""
    async def scenario(env: Env) -> None:
        pcs = make_pcs("dup", [("a", 1)])
        pcs.spec.template.cliques[0].spec.pod_spec.containers[0].env = [
            EnvVar(name=L.ENV_PCS_NAME, value="old-pcs-name"),
            EnvVar(name="KEEP", value="kept"),
            EnvVar(name=L.ENV_PCS_INDEX, value="old-index")]
        await env.create(pcs)
        await env.settle()
        (pod,) = await env.pods()
        names = [e.name for e in _env(pod)]
        assert names == [*POD_VARS, "KEEP"]
        assert {e.name: e.value for e in _env(pod)}[L.ENV_PCS_NAME] == "dup"

    run(scenario)


def test_add_grove_environment_variables_multiple_containers() -> None:
    async def scenario(env: Env) -> None:
        from phalanx.api.core import Container

        pcs = make_pcs("multi", [("a", 1)])
        ps = pcs.spec.template.cliques[0].spec.pod_spec
        ps.containers.append(Container(name="side", image="busybox"))
        ps.init_containers = [Container(name="init", image="busybox")]
        await env.create(pcs)
        await env.settle()
        (pod,) = await env.pods()
        for c in [*pod.spec.containers, *pod.spec.init_containers]:
            assert [e.name for e in c.env] == POD_VARS

    run(scenario)


def test_add_environment_variables_to_pod_container_specs() -> None:
    """A scaling group member's pods: the group's variables follow the pod's (Grove prepends
    them to the PodClique first), name and index by fieldRef, the group's pod count as a
    value."""
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("sg", [("leader", 1), ("worker", 2)],
                                  groups=[("grp", ["leader", "worker"], 2, 1)]))
        await env.settle()
        pod = next(p for p in await env.pods() if hostname(p) == "sg-0-grp-1-worker-1")
        assert [e.name for e in _env(pod)] == [*POD_VARS, *PCSG_VARS]
        by = {e.name: e for e in _env(pod)}
        assert by[L.ENV_PCSG_TEMPLATE_NUM_PODS].value == "3"
        assert by[L.ENV_PCSG_NAME].value_from["fieldRef"]["fieldPath"] == \
            f"metadata.labels['{L.LABEL_PODCLIQUESCALINGGROUP}']"
        assert by[L.ENV_PCSG_INDEX].value_from["fieldRef"]["fieldPath"] == \
            f"metadata.labels['{L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX}']"
        assert pod.metadata.labels[L.LABEL_PODCLIQUESCALINGGROUP] == "sg-0-grp"
        assert pod.metadata.labels[L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX] == "1"

    run(scenario)
