"""The grove-initc init container the operator injects for startup order (Grove's
`podclique/components/pod/initcontainer.go`, and `initc/cmd/opts/options_test.go`'s
TestGetPodCliqueDependencies for the argument format; its TestInitializeCLIOptions checks
pflag defaults, which typer's required option replaces). The simulated kubelet reads the
same arguments, so a run starts pods when the real init container would let them."""

from __future__ import annotations

import pytest
from op_harness import Env, make_pcs, run

from phalanx.api.core import Pod
from phalanx.operator import ANNOTATION_STARTS_AFTER
from phalanx.operator.startupwaiter import (
    ENV_IMAGE,
    INIT_CONTAINER_NAME,
    RELEASE_IMAGE,
    dependencies_of,
    parse_podcliques,
)
from tests.podnames import hostname


@pytest.mark.parametrize("values,expected", [
    pytest.param(["podclique-a:3", "podclique-b:5"], {"podclique-a": 3, "podclique-b": 5},
                 id="valid_multiple_podcliques"),
    pytest.param(["my-podclique:1"], {"my-podclique": 1}, id="valid_single_podclique"),
    pytest.param([], {}, id="empty_input"),
    pytest.param(["  ", "\t", ""], {}, id="whitespace_only_entries"),
    pytest.param(["  podclique-a:2  ", "podclique-b:4"], {"podclique-a": 2, "podclique-b": 4},
                 id="input_with_whitespace"),
    pytest.param(["  podclique-a :   2  ", "podclique-b:  4"],
                 {"podclique-a": 2, "podclique-b": 4}, id="input_with_whitespace_around_colon"),
])
def test_get_pod_clique_dependencies(values: list[str], expected: dict[str, int]) -> None:
    assert dict(parse_podcliques(values)) == expected


@pytest.mark.parametrize("values,error", [
    pytest.param(["podclique-zero:0"], "replica count must be positive, got 0",
                 id="zero_replicas"),
    pytest.param(["podclique-invalid"], "expected two values per podclique", id="missing_colon"),
    pytest.param(["podclique:extra:parts:3"], "found 4", id="too_many_colons"),
    pytest.param(["podclique-a:invalid"], "failed to convert replicas to int",
                 id="non_numeric_replicas"),
    pytest.param(["podclique-negative:-1"], "replica count must be positive, got -1",
                 id="negative_replicas"),
    pytest.param(["podclique-empty-replicas:"], "failed to convert replicas to int",
                 id="empty_replicas"),
    pytest.param(["podclique-a:3", "invalid-entry"], "'invalid-entry'", id="mixed_valid_invalid"),
    pytest.param([":5"], "podclique name cannot be empty", id="empty_podclique_name"),
    pytest.param(["  :3"], "podclique name cannot be empty",
                 id="whitespace_only_podclique_name"),
])
def test_get_pod_clique_dependencies_rejects(values: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_podcliques(values)


def _initc(pod: Pod) -> dict | None:
    for c in pod.spec.init_containers or ():
        if c.name == INIT_CONTAINER_NAME:
            return c.model_dump(by_alias=True, exclude_none=True)
    return None


def test_configure_pod_init_container(monkeypatch: pytest.MonkeyPatch) -> None:
    """InOrder: each clique's pods wait for the previous clique's minAvailable Ready pods;
    the first clique's pods get no init container. The image comes from the environment,
    as Grove's GROVE_INIT_CONTAINER_IMAGE."""
    monkeypatch.setenv(ENV_IMAGE, "registry.example/phalanx:test")

    async def scenario(env: Env) -> None:
        pcs = make_pcs("ord", [("a", 2), ("b", 3, 2), ("c", 1)],
                       startup="CliqueStartupTypeInOrder")
        pcs.spec.template.cliques[2].spec.pod_spec.init_containers = [
            pcs.spec.template.cliques[2].spec.pod_spec.containers[0].model_copy(
                update={"name": "user-init"})]
        await env.create(pcs)
        await env.settle()
        pods = {hostname(p): p for p in await env.pods()}
        assert _initc(pods["ord-0-a-0"]) is None and not pods["ord-0-a-0"].spec.volumes
        c = pods["ord-0-c-0"]
        assert [i.name for i in c.spec.init_containers or ()] == ["user-init", "grove-initc"]
        initc = _initc(c)
        assert initc == {
            "name": "grove-initc", "image": "registry.example/phalanx:test",
            "args": ["startup-wait", "--podcliques=ord-0-b:2"],
            "volumeMounts": [
                {"name": "pod-info-vol", "readOnly": True, "mountPath": "/var/grove/pod-info"},
                {"name": "sa-token-secret-vol", "readOnly": True,
                 "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}
        assert c.spec.volumes == [
            {"name": "sa-token-secret-vol",
             "secret": {"secretName": "ord-ic-sat", "defaultMode": 420}},
            {"name": "pod-info-vol", "downwardAPI": {"items": [
                {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}},
                {"path": "podgangname",
                 "fieldRef": {"fieldPath": "metadata.labels['grove.io/podgang']"}}]}}]
        # Grove's variables go to the user's containers, not to the waiter.
        assert "env" not in initc
        assert dependencies_of(pods["ord-0-b-0"]) == [("ord-0-a", 2)]

    run(scenario, kubelet=False, binder=False)


def test_init_container_image_defaults_to_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_IMAGE, raising=False)

    async def scenario(env: Env) -> None:
        await env.create(make_pcs("img", [("a", 1), ("b", 1)],
                                  startup="CliqueStartupTypeInOrder"))
        await env.settle()
        pod = next(p for p in await env.pods() if hostname(p) == "img-0-b-0")
        assert (_initc(pod) or {}).get("image") == RELEASE_IMAGE

    run(scenario, kubelet=False, binder=False)


def test_explicit_waits_for_every_scaling_group_replica() -> None:
    """Explicit startsAfter on a clique in a scaling group, from a standalone clique: the
    waiter lists the parent PodClique of each group replica within the group's minAvailable
    (the replicas in the base PodGang), with the clique's minAvailable."""
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("ex", [("w", 2, 1), ("r", 1)], groups=[("g", ["w"], 3, 2)],
                                  startup="CliqueStartupTypeExplicit",
                                  starts_after={"r": ["w"]}))
        await env.settle()
        pod = next(p for p in await env.pods() if hostname(p) == "ex-0-r-0")
        assert (_initc(pod) or {}).get("args") == [
            "startup-wait", "--podcliques=ex-0-g-0-w:1", "--podcliques=ex-0-g-1-w:1"]

    run(scenario, kubelet=False, binder=False)


def test_kubelet_follows_the_init_container_arguments() -> None:
    """One source of truth: the simulated kubelet waits for what grove-initc's arguments
    name, even when the annotation says otherwise."""
    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("k", [("a", 1), ("b", 1)],
                                  startup="CliqueStartupTypeInOrder"))
        await env.settle()
        pod = next(p for p in await env.pods() if hostname(p) == "k-0-b-0")
        assert pod.status.phase == "Running"
        # A pod whose waiter names a parent that never becomes Ready stays Pending.
        stuck = pod.model_copy(deep=True)
        stuck.metadata = stuck.metadata.model_copy(update={
            "name": "k-0-b-stuck", "resource_version": None, "uid": None,
            "creation_timestamp": None, "generate_name": None,
            "owner_references": [],  # not the PodClique's: it would scale the extra pod in
            "annotations": {**pod.metadata.annotations, ANNOTATION_STARTS_AFTER: "k-0-a:1"}})
        stuck.spec.node_name = None
        for c in stuck.spec.init_containers or ():
            if c.name == INIT_CONTAINER_NAME:
                c.args = ["startup-wait", "--podcliques=k-0-missing:1"]
        created = await env.cluster.create(stuck)
        await env.cluster.bind(created.name, created.metadata.namespace or "", "node-0")
        await env.settle()
        got = next(p for p in await env.pods() if p.name == "k-0-b-stuck")
        cond = got.get_condition("Initialized")
        assert got.status.phase != "Running"
        assert cond is not None and cond.message == "waiting for 1 Ready pod(s) of k-0-missing"

    run(scenario)
