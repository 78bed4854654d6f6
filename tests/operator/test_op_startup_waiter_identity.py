"""The startup waiter's identity, one of each per PodCliqueSet, as Grove's
`podcliqueset/components/{serviceaccount,satokensecret,role,rolebinding}` build them
(each *_test.go's TestSync and TestDelete ported). TestNew and TestGetExistingResourceNames
test Grove's component interface, which Phalanx does not have: each controller reads its
objects from an informer restricted to its component label (the "not ours" case below).
Grove's satokensecret cases about its legacy `-initc-sa-token-secret` name are migrations
of objects Phalanx never created, so there is nothing to port."""

from __future__ import annotations

from op_harness import NS, Env, make_pcs, run

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.rbac import PolicyRule, Role, RoleBinding, Secret, ServiceAccount
from phalanx.operator.role import role_name
from phalanx.operator.rolebinding import role_binding_name
from phalanx.operator.satokensecret import token_secret_name
from phalanx.operator.serviceaccount import service_account_name


def _owned_by(obj: object, pcs: str) -> None:
    meta = obj.metadata  # type: ignore[attr-defined]
    assert meta.labels[L.LABEL_MANAGED_BY] == L.MANAGED_BY_VALUE
    assert meta.labels[L.LABEL_PART_OF] == pcs
    ref = meta.controller_ref()
    assert ref is not None and (ref.kind, ref.name) == ("PodCliqueSet", pcs)


def test_serviceaccount_sync_creates_new_service_account() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("test-pcs", [("a", 1)]))
        await env.settle()
        sa = await env.cluster.get(ServiceAccount, service_account_name("test-pcs"), NS)
        assert sa.name == "test-pcs"
        _owned_by(sa, "test-pcs")
        assert sa.metadata.labels[L.LABEL_COMPONENT] == "pod-service-account"
        assert sa.metadata.labels[L.LABEL_APP_NAME] == "test-pcs"
        assert sa.automount_service_account_token is True

    run(scenario)


def test_role_sync_creates_new_role() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("test-pcs", [("a", 1)]))
        await env.settle()
        role = await env.cluster.get(Role, role_name("test-pcs"), NS)
        assert role.name == "grove.io:pcs:test-pcs"
        _owned_by(role, "test-pcs")
        assert role.metadata.labels[L.LABEL_COMPONENT] == "pod-role"
        assert role.metadata.labels[L.LABEL_APP_NAME] == "grove.io-pcs-test-pcs"
        assert role.rules == [PolicyRule(api_groups=[""], resources=["pods", "pods/status"],
                                         verbs=["get", "list", "watch"])]

    run(scenario)


def test_rolebinding_sync_creates_new_role_binding() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("test-pcs", [("a", 1)]))
        await env.settle()
        rb = await env.cluster.get(RoleBinding, role_binding_name("test-pcs"), NS)
        assert rb.name == "grove.io:pcs:test-pcs"
        _owned_by(rb, "test-pcs")
        assert rb.metadata.labels[L.LABEL_COMPONENT] == "pod-role-binding"
        assert (rb.role_ref.api_group, rb.role_ref.kind, rb.role_ref.name) == (
            "rbac.authorization.k8s.io", "Role", "grove.io:pcs:test-pcs")
        assert [(s.kind, s.name, s.namespace) for s in rb.subjects or ()] == [
            ("ServiceAccount", "test-pcs", NS)]

    run(scenario)


def test_satokensecret_sync_creates_new_secret() -> None:
    async def scenario(env: Env) -> None:
        name = "a" * 44  # Grove's "long admitted pcs name" case: labels stay valid
        await env.create(make_pcs(name, [("a", 1)]))
        await env.settle()
        secret = await env.cluster.get(Secret, token_secret_name(name), NS)
        assert secret.name == f"{name}-ic-sat" and len(secret.name) <= 63
        _owned_by(secret, name)
        assert secret.metadata.labels[L.LABEL_COMPONENT] == "pod-sa-token-secret"
        assert secret.metadata.labels[L.LABEL_APP_NAME] == secret.name
        assert secret.type == "kubernetes.io/service-account-token"
        assert secret.metadata.annotations["kubernetes.io/service-account.name"] == name

    run(scenario)


def test_role_sync_skips_when_role_exists_and_restores_edits() -> None:
    """Grove's "skips when role exists"; beyond it, a rule someone widened is put back."""
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("test-pcs", [("a", 1)]))
        await env.settle()
        role = await env.cluster.get(Role, role_name("test-pcs"), NS)
        rv = role.metadata.resource_version
        await env.cluster.update(await env.pcs("test-pcs"))  # a PodCliqueSet event
        await env.settle()
        assert (await env.cluster.get(Role, role.name, NS)).metadata.resource_version == rv
        role.rules = [PolicyRule(api_groups=[""], resources=["secrets"], verbs=["*"])]
        await env.cluster.update(role)
        await env.settle()
        restored = await env.cluster.get(Role, role.name, NS)
        assert restored.rules == [PolicyRule(api_groups=[""],
                                             resources=["pods", "pods/status"],
                                             verbs=["get", "list", "watch"])]

    run(scenario)


def test_components_delete_with_their_podcliqueset() -> None:
    """TestDelete of all four: Phalanx leaves them to the garbage collector (owner
    references); another PodCliqueSet's, and objects that are not ours, stay."""
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("gone", [("a", 1)]))
        await env.create(make_pcs("kept", [("a", 1)]))
        await env.cluster.create(Role(metadata=ObjectMeta(name="grove.io:pcs:other",
                                                          namespace=NS)))
        await env.settle()
        await env.cluster.delete(type(await env.pcs("gone")), "gone", NS)
        await env.settle()
        for kind, name in ((ServiceAccount, service_account_name), (Role, role_name),
                           (RoleBinding, role_binding_name), (Secret, token_secret_name)):
            left = {o.name for o in (await env.cluster.list(kind, NS)).items}
            assert name("gone") not in left and name("kept") in left, (kind.KIND, left)
        assert "grove.io:pcs:other" in {r.name for r in (await env.cluster.list(Role, NS)).items}

    run(scenario)
