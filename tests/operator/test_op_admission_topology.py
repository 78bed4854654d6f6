"""Topology constraint admission: Grove's webhook tests
(operator/internal/webhook/admission/pcs/validation/topologyconstraints_test.go), one
parametrized test per Go test with the Go row names as ids, and Grove's CEL rules on
PodCliqueSet (its CRD's x-kubernetes-validations).

Built as Grove's `buildTestPCS` builds them: every constraint gets topologyName
"test-topology" and a deprecated packDomain becomes pack.required (`_pcs`); `buildRawTestPCS`
keeps the constraint as written (`_raw`).

Not ported: TestTopologyConstraintWarnings (two rows). Grove returns admission warnings
("pack.preferred is coarser than pack.required", "packDomain is deprecated"); Phalanx's
admission chain and webhook return no warnings, only denials.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.grove import (
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueSetSpec,
    PodCliqueSetTemplateSpec,
    PodCliqueSpec,
    PodCliqueTemplateSpec,
    TopologyConstraint,
    TopologyPackConstraint,
)
from phalanx.api.pod import Container, PodSpec
from phalanx.cluster.client import ServerError
from phalanx.cluster.clock import run_virtual
from phalanx.operator.admission_topology import cel_errors, webhook_errors

TC = TopologyConstraint


def _tc(domain: str | None = None, name: str | None = None, *, required: str | None = None,
        preferred: str | None = None) -> TopologyConstraint:
    pack = TopologyPackConstraint(required=required, preferred=preferred) \
        if required or preferred else None
    return TC(topology_name=name, pack_domain=domain, pack=pack)


def _clique(name: str, tc: TopologyConstraint | None = None) -> PodCliqueTemplateSpec:
    return PodCliqueTemplateSpec(name=name, topology_constraint=tc, spec=PodCliqueSpec(
        role_name=f"{name}-role", replicas=1,
        pod_spec=PodSpec(containers=[Container(name="c", image="busybox")])))


def _group(name: str, cliques: list[str], tc: TopologyConstraint | None = None
           ) -> PodCliqueScalingGroupConfig:
    return PodCliqueScalingGroupConfig(name=name, clique_names=cliques, topology_constraint=tc)


def _normalized(tc: TopologyConstraint | None) -> TopologyConstraint | None:
    if tc is None:
        return None
    out = tc.model_copy(deep=True)
    out.topology_name = out.topology_name or "test-topology"
    if out.pack is None and out.pack_domain:
        out.pack, out.pack_domain = TopologyPackConstraint(required=out.pack_domain), None
    return out


def _pcs(pcs_tc: TopologyConstraint | None = None,
         cliques: list[PodCliqueTemplateSpec] | None = None,
         groups: list[PodCliqueScalingGroupConfig] | None = None) -> PodCliqueSet:
    """Grove's buildTestPCS."""
    cliques = [c.model_copy(update={"topology_constraint": _normalized(c.topology_constraint)})
               for c in cliques or [_clique("worker")]]
    groups = [g.model_copy(update={"topology_constraint": _normalized(g.topology_constraint)})
              for g in groups or ()]
    return _raw(_normalized(pcs_tc), cliques, groups)


def _raw(pcs_tc: TopologyConstraint | None,
         cliques: list[PodCliqueTemplateSpec] | None = None,
         groups: list[PodCliqueScalingGroupConfig] | None = None) -> PodCliqueSet:
    """Grove's buildRawTestPCS (constraints as written)."""
    return PodCliqueSet(metadata=ObjectMeta(name="test-pcs", namespace="default"),
                        spec=PodCliqueSetSpec(replicas=1, template=PodCliqueSetTemplateSpec(
                            cliques=cliques or [_clique("worker")], topology_constraint=pcs_tc,
                            pod_clique_scaling_groups=groups or None)))


def _validate(pcs: PodCliqueSet, old: PodCliqueSet | None = None, *, enabled: bool = True,
              domains: list[str] | None = None, topologies: dict[str, Any] | None = None
              ) -> list[tuple[str, str]]:
    """Grove's validate() / validateUpdate(): `domains` are those of any topology name;
    `topologies` maps names to domains (or to an exception the lookup raises)."""
    async def lookup(name: str) -> list[str] | None:
        if topologies is None:
            return domains
        found = topologies.get(name)
        if isinstance(found, Exception):
            raise found
        return found

    return run_virtual(lambda: webhook_errors(pcs, old, enabled=enabled, lookup=lookup))


def _fields(errs: list[tuple[str, str]]) -> list[str]:
    return [f for f, _ in errs]


# --- TestValidateTASDisabledWithConstraints ---------------------------------------------------

TAS_DISABLED = [
    ("Should not allow PCS level constraint when TAS is disabled",
     _pcs(_tc("zone")), ["spec.template.topologyConstraint"]),
    ("Should not allow PodClique level constraint when TAS is disabled",
     _pcs(cliques=[_clique("worker", _tc("host"))]),
     ["spec.template.cliques[0].topologyConstraint"]),
    ("Should not allow PCSG level constraint when TAS is disabled",
     _pcs(groups=[_group("sg1", ["worker"], _tc("rack"))]),
     ["spec.template.podCliqueScalingGroups[0].topologyConstraint"]),
    ("Should report all errors when Topology constraints are set during create when TAS "
     "disabled",
     _pcs(_tc("region"), [_clique("worker1", _tc("zone")), _clique("worker2", _tc("host"))],
          [_group("sg1", ["worker1"], _tc("rack"))]),
     ["spec.template.topologyConstraint", "spec.template.cliques[0].topologyConstraint",
      "spec.template.cliques[1].topologyConstraint",
      "spec.template.podCliqueScalingGroups[0].topologyConstraint"]),
    ("Should allow PCS create with no constraints when TAS is disabled", _pcs(), []),
]


@pytest.mark.parametrize(("pcs", "fields"), [r[1:] for r in TAS_DISABLED],
                         ids=[r[0] for r in TAS_DISABLED])
def test_ValidateTASDisabledWithConstraints(pcs: PodCliqueSet, fields: list[str]) -> None:
    errs = _validate(pcs, enabled=False, domains=[])
    assert sorted(_fields(errs)) == sorted(fields)
    assert all("not allowed when Topology Aware Scheduling is disabled" in m for _, m in errs)


# --- TestValidateTASEnabledWhenDomainNotInClusterTopology ------------------------------------

REGION_ZONE_RACK = ["region", "zone", "rack"]
NOT_IN_TOPOLOGY = [
    ("Should report error when PCS level domain not in cluster topology", _pcs(_tc("host")),
     ["spec.template.topologyConstraint.pack.required"]),
    ("Should report error when PodClique level domain not in cluster topology",
     _pcs(cliques=[_clique("worker", _tc("numa"))]),
     ["spec.template.cliques[0].topologyConstraint.pack.required"]),
    ("Should report error when PCSG level domain not in cluster topology",
     _pcs(groups=[_group("sg1", ["worker"], _tc("datacenter"))]),
     ["spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required"]),
    ("Should allow Valid domains in cluster topology",
     _pcs(_tc("region"), [_clique("worker", _tc("zone"))]), []),
    ("Should return early on invalid domain and not run hierarchical validation",
     _pcs(_tc("numa"), [_clique("worker", _tc("zone"))]),
     ["spec.template.topologyConstraint.pack.required"]),
    ("Should return early when child domain is invalid even if hierarchy would be violated",
     _pcs(_tc("rack"), [_clique("worker", _tc("numa"))]),
     ["spec.template.cliques[0].topologyConstraint.pack.required"]),
]


@pytest.mark.parametrize(("pcs", "fields"), [r[1:] for r in NOT_IN_TOPOLOGY],
                         ids=[r[0] for r in NOT_IN_TOPOLOGY])
def test_ValidateTASEnabledWhenDomainNotInClusterTopology(pcs: PodCliqueSet,
                                                          fields: list[str]) -> None:
    errs = _validate(pcs, domains=REGION_ZONE_RACK)
    assert _fields(errs) == fields
    assert all("does not exist in cluster topology" in m for _, m in errs)


# --- TestValidateHierarchyViolations ----------------------------------------------------------

ALL_LEVELS = ["region", "zone", "rack", "host", "numa"]
HIERARCHY = [
    ("Should allow PCS topology constraints broader than PodClique",
     _pcs(_tc("zone"), [_clique("worker", _tc("host"))]), []),
    ("Should forbid PCS topology constraints narrower than PodClique",
     _pcs(_tc("host"), [_clique("worker", _tc("zone"))]), ["spec.template.topologyConstraint"]),
    ("Should forbid PCS topology constraints narrower than PCSG",
     _pcs(_tc("numa"), groups=[_group("sg1", ["worker"], _tc("rack"))]),
     ["spec.template.topologyConstraint"]),
    ("Should forbid PCSG topology constraints narrower than PodClique",
     _pcs(cliques=[_clique("worker", _tc("zone"))],
          groups=[_group("sg1", ["worker"], _tc("host"))]),
     ["spec.template.podCliqueScalingGroups[0].topologyConstraint"]),
    ("Should allow same level for topology constraints",
     _pcs(_tc("zone"), [_clique("worker", _tc("zone"))]), []),
    ("Should disallow topology constraints at multiple levels",
     _pcs(_tc("numa"), [_clique("worker1", _tc("zone")), _clique("worker2", _tc("rack"))],
          [_group("sg1", ["worker1", "worker2"], _tc("host"))]),
     ["spec.template.topologyConstraint"] * 3
     + ["spec.template.podCliqueScalingGroups[0].topologyConstraint"] * 2),
]


@pytest.mark.parametrize(("pcs", "fields"), [r[1:] for r in HIERARCHY],
                         ids=[r[0] for r in HIERARCHY])
def test_ValidateHierarchyViolations(pcs: PodCliqueSet, fields: list[str]) -> None:
    errs = _validate(pcs, domains=ALL_LEVELS)
    assert _fields(errs) == fields
    assert all("is narrower than" in m for _, m in errs)


# --- TestValidateUpdateTopologyNameImmutability -----------------------------------------------

NAME_IMMUTABLE = [
    ("Should allow when topologyName is unchanged", _tc("zone", "topo-a"), _tc("zone", "topo-a"),
     []),
    ("Should disallow when topologyName is changed", _tc("zone", "topo-a"),
     _tc("zone", "topo-b"), ["spec.template.topologyConstraint.topologyName"]),
    ("Should disallow when topologyName is added", None, _tc("zone", "topo-a"),
     ["spec.template.topologyConstraint.topologyName"]),
    ("Should disallow when topologyName is removed", _tc("zone", "topo-a"), None,
     ["spec.template.topologyConstraint.topologyName"]),
]


@pytest.mark.parametrize(("old", "new", "fields"), [r[1:] for r in NAME_IMMUTABLE],
                         ids=[r[0] for r in NAME_IMMUTABLE])
def test_ValidateUpdateTopologyNameImmutability(old: Any, new: Any, fields: list[str]) -> None:
    errs = _validate(_pcs(new), _pcs(old))
    assert _fields(errs) == fields
    assert all(m.startswith("Forbidden: ") for _, m in errs)


# --- TestValidateHierarchyWithCustomDomains ---------------------------------------------------

CUSTOM = [
    ("Should allow custom domain hierarchy: datacenter > host",
     _pcs(_tc("datacenter"), [_clique("worker", _tc("host"))]), []),
    ("Should reject custom domain hierarchy: host > datacenter (narrower parent)",
     _pcs(_tc("host"), [_clique("worker", _tc("datacenter"))]),
     ["spec.template.topologyConstraint"]),
]


@pytest.mark.parametrize(("pcs", "fields"), [r[1:] for r in CUSTOM], ids=[r[0] for r in CUSTOM])
def test_ValidateHierarchyWithCustomDomains(pcs: PodCliqueSet, fields: list[str]) -> None:
    assert _fields(_validate(pcs, domains=["datacenter", "rack", "gpu-module", "host"])) == fields


# --- TestValidateUpdateTopologyConstraintImmutability -----------------------------------------

W_HOST = [_clique("worker", _tc("host"))]
W_ZONE = [_clique("worker", _tc("zone"))]
IMMUTABLE = [
    ("Should allow when there are no changes to topology constraints",
     (_tc("zone"), W_HOST, None), (_tc("zone"), W_HOST, None), []),
    ("Should disallow when PCS constraint are changed", (_tc("zone"), None, None),
     (_tc("rack"), None, None), ["spec.template.topologyConstraint"]),
    ("Should disallow when PCS constraint are added", (None, None, None),
     (_tc("zone"), None, None), ["spec.template.topologyConstraint.topologyName"]),
    ("Should disallow when PCS constraint are removed", (_tc("zone"), None, None),
     (None, None, None), ["spec.template.topologyConstraint.topologyName"]),
    ("Should disallow when PodClique constraint is changed", (None, W_ZONE, None),
     (None, W_HOST, None), ["spec.template.cliques[0].topologyConstraint"]),
    ("Should disallow when PodClique constraint is added", (None, None, None),
     (None, W_HOST, None), ["spec.template.cliques[0].topologyConstraint"]),
    ("Should disallow when PodClique constraint is removed", (None, W_HOST, None),
     (None, None, None), ["spec.template.cliques[0].topologyConstraint"]),
    ("Should disallow when PCSG constraint is changed",
     (None, None, [_group("sg1", ["worker"], _tc("zone"))]),
     (None, None, [_group("sg1", ["worker"], _tc("rack"))]),
     ["spec.template.podCliqueScalingGroups[0].topologyConstraint"]),
    ("Should disallow when PCSG constraint is added", (None, None, [_group("sg1", ["worker"])]),
     (None, None, [_group("sg1", ["worker"], _tc("zone"))]),
     ["spec.template.podCliqueScalingGroups[0].topologyConstraint"]),
    ("Should disallow when PCSG constraint is removed",
     (None, None, [_group("sg1", ["worker"], _tc("zone"))]),
     (None, None, [_group("sg1", ["worker"])]),
     ["spec.template.podCliqueScalingGroups[0].topologyConstraint"]),
    ("Should disallow when multiple constraint are changed",
     (_tc("region"), [_clique("worker1", _tc("zone")), _clique("worker2", _tc("rack"))], None),
     (_tc("zone"), [_clique("worker1", _tc("rack")), _clique("worker2")], None),
     ["spec.template.topologyConstraint", "spec.template.cliques[0].topologyConstraint",
      "spec.template.cliques[1].topologyConstraint"]),
]


@pytest.mark.parametrize(("old", "new", "fields"), [r[1:] for r in IMMUTABLE],
                         ids=[r[0] for r in IMMUTABLE])
def test_ValidateUpdateTopologyConstraintImmutability(old: Any, new: Any,
                                                      fields: list[str]) -> None:
    errs = _validate(_pcs(*new), _pcs(*old), domains=["region", "zone", "rack", "host"])
    assert _fields(errs) == fields


# --- TestValidateUpdateDeprecatedPackDomainMigration ------------------------------------------

MIGRATION = [
    ("Should allow moving deprecated packDomain to pack.required when level is unchanged",
     _tc("host", "topo-a"), _tc(None, "topo-a", required="host"), []),
    ("Should reject moving deprecated packDomain to a different pack.required level",
     _tc("host", "topo-a"), _tc(None, "topo-a", required="rack"),
     ["spec.template.topologyConstraint"]),
    ("Should reject changing preferred domain while moving deprecated packDomain to "
     "pack.required",
     _tc("host", "topo-a", preferred="rack"), _tc(None, "topo-a", required="host",
                                                    preferred="zone"),
     ["spec.template.topologyConstraint"]),
]


@pytest.mark.parametrize(("old", "new", "fields"), [r[1:] for r in MIGRATION],
                         ids=[r[0] for r in MIGRATION])
def test_ValidateUpdateDeprecatedPackDomainMigration(old: Any, new: Any,
                                                     fields: list[str]) -> None:
    errs = _validate(_raw(new), _raw(old))
    assert _fields(errs) == fields
    if errs:
        assert "deprecated packDomain migration" in errs[0][1]


# --- TestResolveTopologyDomains ---------------------------------------------------------------

MY_TOPO = {"my-topo": ["zone", "host"]}
RESOLVE = [
    ("Happy path: PCS has constraint and ClusterTopologyBinding exists",
     _pcs(_tc("zone", "my-topo")), MY_TOPO, []),
    ("Child topologyName matching PCS is allowed",
     _pcs(_tc("zone", "my-topo"), [_clique("worker", _tc("host", "my-topo"))]), MY_TOPO, []),
    ("Child inherits topologyName from PCS",
     _raw(_tc(None, "my-topo", required="zone"), [_clique("worker", _tc(required="host"))]),
     MY_TOPO, []),
    ("Standalone clique does not inherit topologyName from unrelated PCSG",
     _raw(None, [_clique("standalone", _tc(required="host")),
                 _clique("grouped", _tc(required="host"))],
          [_group("workers", ["grouped"], _tc(None, "my-topo", required="zone"))]),
     {}, [("spec.template.cliques[0].topologyConstraint.topologyName", "is required")]),
    ("Incomplete PCS topology constraint is rejected", _raw(_tc(required="zone")), {},
     [("spec.template.topologyConstraint.topologyName", "is required")]),
    ("Child-only explicit topology constraint is allowed",
     _pcs(cliques=[_clique("worker", _tc("host", "my-topo"))]), MY_TOPO, []),
    ("Child topologyName mismatch is rejected",
     _pcs(_tc("zone", "my-topo"), [_clique("worker", _tc("host", "other-topo"))]), {},
     [("spec.template.cliques[0].topologyConstraint.topologyName", "must match")]),
    ("No constraints: PCS has no topology constraints at all", _pcs(), {}, []),
    ("CT not found: ClusterTopologyBinding referenced by topologyName does not exist",
     _pcs(_tc("zone", "missing-topo")), {},
     [("spec.template.topologyConstraint.topologyName",
       "ClusterTopologyBinding 'missing-topo' not found")]),
    ("API error: non-404 error is surfaced as InternalError",
     _pcs(_tc("zone", "broken-topo")), {"broken-topo": ServerError("API server unavailable")},
     [("spec.template.topologyConstraint.topologyName", "Internal error")]),
]


@pytest.mark.parametrize(("pcs", "topologies", "expected"), [r[1:] for r in RESOLVE],
                         ids=[r[0] for r in RESOLVE])
def test_ResolveTopologyDomains(pcs: PodCliqueSet, topologies: dict[str, Any],
                                expected: list[tuple[str, str]]) -> None:
    errs = _validate(pcs, topologies=topologies)
    assert _fields(errs) == [f for f, _ in expected]
    for (_, message), (_, words) in zip(errs, expected, strict=True):
        assert words in message


# --- Grove's CEL rules (x-kubernetes-validations of its PodCliqueSet CRD) ---------------------

NO_PACK_DOMAIN = "packDomain is deprecated and cannot be used on new workloads; use pack.required"
CEL = [
    ("a new PodCliqueSet with packDomain",
     _raw(_tc("rack", "t")), None,
     [("spec.template.topologyConstraint.packDomain", NO_PACK_DOMAIN)]),
    ("a new clique with packDomain", _raw(None, [_clique("w", _tc("rack", "t"))]), None,
     [("spec.template.cliques", NO_PACK_DOMAIN)]),
    ("a new scaling group with packDomain",
     _raw(None, groups=[_group("g", ["worker"], _tc("rack", "t"))]), None,
     [("spec.template.podCliqueScalingGroups", NO_PACK_DOMAIN)]),
    ("an existing object keeps packDomain on update", _raw(_tc("rack", "t")),
     _raw(_tc("rack", "t")), []),
    ("neither pack nor packDomain", _raw(TC(topology_name="t")), None,
     [("spec.template.topologyConstraint.pack", "must specify pack or deprecated packDomain")]),
    ("pack without required or preferred",
     _raw(TC(topology_name="t", pack=TopologyPackConstraint())), None,
     [("spec.template.topologyConstraint.pack", "at least one of required or preferred")]),
    ("both pack.required and packDomain", _raw(_tc("rack", "t", required="rack")),
     _raw(_tc("rack", "t", required="rack")),
     [("spec.template.topologyConstraint.pack.required",
       "must not set both pack.required and deprecated packDomain")]),
]


@pytest.mark.parametrize(("pcs", "old", "expected"), [r[1:] for r in CEL],
                         ids=[r[0] for r in CEL])
def test_grove_cel_rules(pcs: PodCliqueSet, old: PodCliqueSet | None,
                         expected: list[tuple[str, str]]) -> None:
    errs = cel_errors(pcs, old)
    assert _fields(errs) == [f for f, _ in expected]
    for (_, message), (_, words) in zip(errs, expected, strict=True):
        assert words in message


def test_legacy_repair_adds_a_topology_name_and_is_then_checked_as_new() -> None:
    """An object created before topologyName existed (packDomain, no name): an update must
    add the name (Grove's legacy repair), and is then validated as on create."""
    old = _raw(_tc("rack"))
    assert _fields(_validate(_raw(_tc("rack")), old, domains=["rack"])) == [
        "spec.template.topologyConstraint.topologyName"]  # still missing: required
    assert _validate(_raw(_tc("rack", "t")), old, domains=["rack"]) == []
    assert _fields(_validate(_raw(_tc("rack", "t")), old, domains=["zone"])) == [
        "spec.template.topologyConstraint.packDomain"]  # not a level of the named topology
