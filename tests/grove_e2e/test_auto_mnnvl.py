"""Grove's auto-MNNVL e2e suites (operator/e2e/tests/auto-mnnvl/*_test.go), one test per
subtest, with Grove's YAML (./yaml/auto-mnnvl, unmodified; the PodCliqueSet renamed as
Grove's applyMNNVLYAML does) on the embedded cluster and the operator.

The cluster "supports" MNNVL when it serves ComputeDomain (resource.nvidia.com/v1beta1); the
unsupported cluster is one whose `serves` says it does not, as a server without NVIDIA's CRD.
One difference from Grove: Phalanx puts the IMEX-channel claim (`mnnvl-claim`) in the pods
it creates, not in the PodClique's pod template (a PodClique's template stays the clique's
as written, so its drift check and template hash are unchanged); Grove's checks of a
PodClique's pod spec are made here on that PodClique's pods.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.api.computedomain import ComputeDomain
from phalanx.api.config import load_operator_config
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueSet
from phalanx.api.registry import from_dict
from phalanx.cluster.client import Invalid, NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.operator.admission_mnnvl import MNNVLPreflightError
from phalanx.operator.computedomain import CLAIM_NAME, FINALIZER

YAML = Path(__file__).resolve().parent / "yaml" / "auto-mnnvl"
NS = "default"
GROUP = "grove.io/mnnvl-group"


class NoComputeDomainCRD(MemoryCluster):
    """A cluster without NVIDIA's DRA driver: it does not serve ComputeDomain."""

    async def serves(self, kind: type) -> bool:
        return kind is not ComputeDomain


def _config(enabled: bool) -> Any:
    return load_operator_config({
        "apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
        "network": {"autoMNNVLEnabled": enabled}})


class Env:
    def __init__(self, cluster: MemoryCluster, op: OperatorManager) -> None:
        self.cluster, self.op = cluster, op

    async def apply(self, file: str, name: str) -> PodCliqueSet:
        """Grove's applyMNNVLYAML: the file with the PodCliqueSet named `name`."""
        data = yaml.safe_load((YAML / file).read_text())
        data["metadata"]["name"] = name
        created = await self.cluster.create(from_dict(data))
        await self.op.wait_idle()
        return created  # type: ignore[return-value]

    async def scale(self, name: str, replicas: int) -> None:
        await self.cluster.patch(PodCliqueSet, name, {"spec": {"replicas": replicas}}, NS)
        await self.op.wait_idle()

    async def delete(self, name: str) -> None:
        await self.cluster.delete(PodCliqueSet, name, NS)
        await self.op.wait_idle()

    async def domains(self, pcs: str) -> dict[str, ComputeDomain]:
        return {d.name: d for d in (await self.cluster.list(
            ComputeDomain, NS, label_selector={"app.kubernetes.io/part-of": pcs})).items}

    async def pods(self, pclq: str) -> list[Pod]:
        await self.cluster.get(PodClique, pclq, NS)  # Grove's waitForPCLQ
        return (await self.cluster.list(Pod, NS,
                                        label_selector={"grove.io/podclique": pclq})).items


def _run(scenario: Callable[[Env], Awaitable[None]], *, enabled: bool = True,
         cluster: type[MemoryCluster] = MemoryCluster) -> None:
    async def main() -> None:
        c = cluster()
        op = OperatorManager(c, _config(enabled))
        await op.start()
        try:
            await scenario(Env(c, op))
        finally:
            await op.stop()

    run_virtual(main)


def _assert_domain(d: ComputeDomain, pcs: PodCliqueSet, replica: int, group: str) -> None:
    """Grove's verifyComputeDomainContent."""
    name = f"{pcs.name}-{replica}-{group}"
    assert d.name == name
    labels = d.metadata.labels
    assert labels["app.kubernetes.io/managed-by"] == "grove-operator"
    assert labels["app.kubernetes.io/part-of"] == pcs.name
    assert labels["app.kubernetes.io/component"] == "pcs-computedomain"
    assert labels["grove.io/podcliqueset-replica-index"] == str(replica)
    assert labels[GROUP] == group
    assert FINALIZER in d.metadata.finalizers
    owner = d.metadata.controller_ref()
    assert owner is not None and (owner.kind, owner.name, owner.uid) == (
        "PodCliqueSet", pcs.name, pcs.metadata.uid)
    assert d.spec.num_nodes == 0
    assert d.spec.channel is not None and d.spec.channel.resource_claim_template.name == name


def _mnnvl_template(pod: Pod) -> str | None:
    """Grove's requirePodSpecMNNVLClaim / requireContainerMNNVLClaim: the claim's template,
    with every GPU container referencing it (None when the pod has no such claim)."""
    claims = [c for c in pod.spec.resource_claims or () if c["name"] == CLAIM_NAME]
    referenced = [c.name for c in pod.spec.containers if c.resources is not None
                  and any(x["name"] == CLAIM_NAME for x in c.resources.claims or ())]
    if not claims:
        assert referenced == [], pod.name
        return None
    assert referenced, pod.name
    return claims[0]["resourceClaimTemplateName"]


# --- Test_AutoMNNVL_SupportedAndEnabled ---------------------------------------------------


def test_AutoMNNVL_SupportedAndEnabled_no_annotation_no_MNNVL() -> None:
    async def scenario(env: Env) -> None:
        pcs = await env.apply("mnnvl-gpu-bare.yaml", "test-gpu-no-mnnvl")
        assert GROUP not in pcs.metadata.annotations
        pods = await env.pods("test-gpu-no-mnnvl-0-gpu-worker")
        assert pods and all(_mnnvl_template(p) is None for p in pods)
        assert await env.domains("test-gpu-no-mnnvl") == {}

    _run(scenario)


def test_AutoMNNVL_SupportedAndEnabled_scale_out_and_in_manages_ComputeDomains() -> None:
    async def scenario(env: Env) -> None:
        pcs = await env.apply("mnnvl-gpu-default.yaml", "test-scale-cd")
        found = await env.domains(pcs.name)
        assert sorted(found) == ["test-scale-cd-0-default"]
        _assert_domain(found["test-scale-cd-0-default"], pcs, 0, "default")
        await env.scale(pcs.name, 3)
        found = await env.domains(pcs.name)
        assert len(found) == 3
        for i in range(3):
            _assert_domain(found[f"test-scale-cd-{i}-default"], pcs, i, "default")
        await env.scale(pcs.name, 1)
        found = await env.domains(pcs.name)
        assert sorted(found) == ["test-scale-cd-0-default"]
        _assert_domain(found["test-scale-cd-0-default"], pcs, 0, "default")
        for i in (1, 2):
            with pytest.raises(NotFound):
                await env.cluster.get(ComputeDomain, f"test-scale-cd-{i}-default", NS)

    _run(scenario)


def test_AutoMNNVL_SupportedAndEnabled_PCS_deletion_cascades_to_ComputeDomain() -> None:
    async def scenario(env: Env) -> None:
        await env.apply("mnnvl-gpu-default.yaml", "test-del-cascade")
        await env.scale("test-del-cascade", 2)
        assert len(await env.domains("test-del-cascade")) == 2
        await env.delete("test-del-cascade")
        assert await env.domains("test-del-cascade") == {}

    _run(scenario)


def test_AutoMNNVL_SupportedAndEnabled_explicit_opt_out_is_honored() -> None:
    async def scenario(env: Env) -> None:
        await env.apply("mnnvl-gpu-optout.yaml", "test-explicit-optout")
        pods = await env.pods("test-explicit-optout-0-gpu-worker")
        assert pods and all(_mnnvl_template(p) is None for p in pods)
        with pytest.raises(NotFound):
            await env.cluster.get(ComputeDomain, "test-explicit-optout-0-none", NS)
        assert await env.domains("test-explicit-optout") == {}

    _run(scenario)


def test_AutoMNNVL_SupportedAndEnabled_invalid_annotation_is_rejected() -> None:
    async def scenario(env: Env) -> None:
        with pytest.raises(Invalid) as err:
            await env.apply("mnnvl-gpu-invalid.yaml", "test-invalid-annot")
        assert "metadata.annotations[grove.io/mnnvl-group]" in str(err.value)
        assert "DNS-1123" in str(err.value)

    _run(scenario)


def test_AutoMNNVL_SupportedAndEnabled_annotation_is_immutable() -> None:
    async def scenario(env: Env) -> None:
        await env.apply("mnnvl-gpu-default.yaml", "test-annot-immut")
        pcs = await env.cluster.get(PodCliqueSet, "test-annot-immut", NS)
        assert pcs.metadata.annotations[GROUP] == "default"
        pcs.metadata.annotations[GROUP] = "other"
        with pytest.raises(Invalid) as err:
            await env.cluster.update(pcs)
        assert "immutable" in str(err.value)

    _run(scenario)


def test_AutoMNNVL_SupportedAndEnabled_CPU_PCLQ_ignored_even_with_annotation() -> None:
    async def scenario(env: Env) -> None:
        await env.apply("mnnvl-cpu-with-annotation.yaml", "test-cpu-ignored")
        assert sorted(await env.domains("test-cpu-ignored")) == ["test-cpu-ignored-0-default"]
        gpu = await env.pods("test-cpu-ignored-0-gp")
        assert gpu and all(_mnnvl_template(p) == "test-cpu-ignored-0-default" for p in gpu)
        cpu = await env.pods("test-cpu-ignored-0-cp")
        assert cpu and all(_mnnvl_template(p) is None for p in cpu)

    _run(scenario)


def test_AutoMNNVL_SupportedAndEnabled_MNNVL_end_to_end() -> None:
    name = "mnnvl-e2e"
    groups = ["batch", "default", "infer", "solo", "train"]

    async def scenario(env: Env) -> None:
        pcs = await env.apply("mnnvl-comprehensive-mix.yaml", name)
        found = await env.domains(name)
        assert sorted(found) == [f"{name}-0-{g}" for g in groups]
        for g in groups:
            _assert_domain(found[f"{name}-0-{g}"], pcs, 0, g)
        # the finalizer holds a ComputeDomain deleted while still needed
        await env.cluster.delete(ComputeDomain, f"{name}-0-default", NS)
        await env.op.wait_idle()
        found = await env.domains(name)
        assert len(found) == len(groups)
        _assert_domain(found[f"{name}-0-default"], pcs, 0, "default")
        with_claims = {"sa1": "default", "sa2": "train", "g1-0-p1": "default",
                       "g1-0-p2": "infer", "g2-0-p4": "train", "g2-0-p5": "batch",
                       "g3-0-p8": "solo"}
        for clique, group in with_claims.items():
            pods = await env.pods(f"{name}-0-{clique}")
            assert pods and all(_mnnvl_template(p) == f"{name}-0-{group}" for p in pods), clique
        for clique in ("sa3", "g1-0-p3", "g2-0-p6", "g3-0-p7", "g3-0-p9"):
            pods = await env.pods(f"{name}-0-{clique}")
            assert pods and all(_mnnvl_template(p) is None for p in pods), clique
        await env.scale(name, 4)
        assert len(await env.domains(name)) == 4 * len(groups)
        await env.scale(name, 2)
        assert sorted(await env.domains(name)) == sorted(
            f"{name}-{r}-{g}" for r in range(2) for g in groups)
        await env.delete(name)
        assert await env.domains(name) == {}

    _run(scenario)


# --- Test_AutoMNNVL_SupportedButDisabled ----------------------------------------------------


def test_AutoMNNVL_SupportedButDisabled_explicit_enabled_annotation_rejected() -> None:
    async def scenario(env: Env) -> None:
        with pytest.raises(Invalid) as err:
            await env.apply("mnnvl-gpu-default.yaml", "test-disabled-reject")
        assert "MNNVL is not enabled in the operator configuration" in str(err.value)

    _run(scenario, enabled=False)


async def _no_artifacts(env: Env) -> None:
    """Grove's testNoMNNVLArtifactsWhenDisabled."""
    name = "test-no-artifacts"
    await env.apply("mnnvl-comprehensive-bare.yaml", name)
    for clique in ("gpu", "cpu"):
        pods = await env.pods(f"{name}-0-{clique}")
        assert pods and all(not p.spec.resource_claims for p in pods)
        assert all(not (c.resources and c.resources.claims)
                   for p in pods for c in p.spec.containers)
    serves = getattr(env.cluster, "serves", None)
    if serves is None or await serves(ComputeDomain):  # Grove skips the list when unserved
        assert (await env.cluster.list(ComputeDomain, NS)).items == []


def test_AutoMNNVL_SupportedButDisabled_no_MNNVL_artifacts_created() -> None:
    _run(_no_artifacts, enabled=False)


# --- Test_AutoMNNVL_UnsupportedAndDisabled --------------------------------------------------


def test_AutoMNNVL_UnsupportedAndDisabled_no_MNNVL_artifacts_created() -> None:
    _run(_no_artifacts, enabled=False, cluster=NoComputeDomainCRD)


# --- Test_AutoMNNVL_UnsupportedButEnabled ---------------------------------------------------


def test_AutoMNNVL_UnsupportedButEnabled_operator_exits_when_CD_CRD_is_missing() -> None:
    async def main() -> None:
        op = OperatorManager(NoComputeDomainCRD(), _config(True))
        with pytest.raises(MNNVLPreflightError) as err:
            await op.start()
        assert "ComputeDomain CRD" in str(err.value)
        assert "autoMNNVLEnabled" in str(err.value)

    run_virtual(main)
