"""kube-controller-manager's resourceclaim controller, on the embedded cluster.

    claims = ResourceClaimController(client)
    await claims.start(); ...; await claims.wait_idle(); await claims.stop()

As pkg/controller/resourceclaim:
- pods: for each `spec.resourceClaims` entry naming a ResourceClaimTemplate, the pod gets a
  claim `<pod>-<entry>-<5 random characters>` (the base cut to 57 characters, both parts
  shortened in proportion), with the template's labels and annotations, the annotation
  `resource.kubernetes.io/pod-claim-name: <entry>`, the template's spec, and the pod as
  controlling owner (so the claim is deleted with it). The claim's name goes into the pod's
  `status.resourceClaimStatuses`. A claim made earlier for the same pod and entry (found by
  owner and annotation) is reused. Pods being deleted or done get nothing.
- claims: a reservation (`status.reservedFor`) of a pod that is gone, replaced or done is
  removed; a claim no pod has reserved any more loses the allocation the scheduler made
  (it carries the delete-protection finalizer) and then the finalizer; a generated claim
  whose pod is done is deleted.
"""

from __future__ import annotations

import logging
import random

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod
from phalanx.api.resource import (
    FINALIZER,
    POD_CLAIM_ANNOTATION,
    ResourceClaim,
    ResourceClaimTemplate,
)
from phalanx.cluster.client import ApiError, Client, Conflict, NotFound
from phalanx.cluster.controller import Controller, Manager, PermanentError, Result
from phalanx.cluster.objects import object_key

log = logging.getLogger(__name__)

_ALPHANUM = "bcdfghjklmnpqrstvwxz2456789"  # utilrand.String's alphabet
MAX_BASE_LEN = 57


def generate_name(pod: str, entry: str) -> str:
    base = f"{pod}-{entry}-"
    if len(base) > MAX_BASE_LEN:
        base = pod[: len(pod) * MAX_BASE_LEN // len(base)] + "-" + \
            entry[: len(entry) * MAX_BASE_LEN // len(base)]
    return base


def _done(pod: Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed") or (
        pod.metadata.deletion_timestamp is not None and not pod.spec.node_name)


class ResourceClaimController:
    def __init__(self, client: Client, *, seed: int = 0) -> None:
        self.client = client
        self.manager = Manager(client)
        self.pods = self.manager.informer(Pod)
        self.claims = self.manager.informer(ResourceClaim)
        self.templates = self.manager.informer(ResourceClaimTemplate)
        self.claims.add_index("owner", lambda c: [r.uid for r in c.metadata.owner_references])
        self._rng = random.Random(seed)
        self.pods_ctl = self.manager.add(Controller("resourceclaim-pods", self._sync_pod))
        self.claims_ctl = self.manager.add(Controller("resourceclaim-claims", self._sync_claim))
        self.pods_ctl.watch(self.pods, predicate=lambda o, n: o.status.resource_claim_statuses
                            != n.status.resource_claim_statuses or _done(n) != _done(o))
        # A template created after its pods lets them proceed.
        self.pods_ctl.watch(self.templates, lambda t: [
            p.key for p in self.pods.list(t.namespace) if p.spec.resource_claims])
        self.claims_ctl.watch(self.claims)
        # A pod gone or done frees its claims' reservations.
        self.claims_ctl.watch(self.pods, self._claims_of_pod)
        self.created = 0  # counters for tests and reports
        self.deallocated = 0

    async def start(self) -> None:
        await self.manager.start()

    async def stop(self) -> None:
        await self.manager.stop()

    async def wait_idle(self, timeout: float | None = None) -> None:
        await self.manager.wait_idle(timeout=timeout)

    def _claims_of_pod(self, pod: Pod) -> list[str]:
        uid = pod.metadata.uid or ""
        out = [c.key for c in self.claims.by_index("owner", uid)]
        for entry in pod.spec.resource_claims or ():
            if isinstance(entry, dict) and entry.get("resourceClaimName"):
                out.append(object_key(pod.namespace, str(entry["resourceClaimName"])))
        return out

    # --- pods -----------------------------------------------------------------------------

    async def _sync_pod(self, key: str) -> Result | None:
        pod = self.pods.get(key)
        if pod is None or not pod.spec.resource_claims or pod.metadata.deletion_timestamp \
                is not None or _done(pod):
            return None
        have = {s.get("name") for s in pod.status.resource_claim_statuses or ()
                if isinstance(s, dict)}
        new: list[dict[str, str]] = []
        for entry in pod.spec.resource_claims:
            if not isinstance(entry, dict) or not entry.get("resourceClaimTemplateName"):
                continue
            name = str(entry.get("name", ""))
            if name in have:
                continue
            claim = self._existing(pod, name) or await self._create(pod, name, str(
                entry["resourceClaimTemplateName"]))
            new.append({"name": name, "resourceClaimName": claim})
        if new:
            statuses = [*(pod.status.resource_claim_statuses or []), *new]
            try:
                await self.client.patch(Pod, pod.name, {"status": {
                    "resourceClaimStatuses": statuses}}, pod.namespace, subresource="status",
                    returning=False)
            except NotFound:
                return None
        return None

    def _existing(self, pod: Pod, entry: str) -> str | None:
        for c in self.claims.by_index("owner", pod.metadata.uid or ""):
            if c.metadata.annotations.get(POD_CLAIM_ANNOTATION) == entry:
                return c.name
        return None

    async def _create(self, pod: Pod, entry: str, template_name: str) -> str:
        tpl = self.templates.get(object_key(pod.namespace, template_name))
        if tpl is None:
            raise PermanentError("TemplateNotFound", f"resource claim template "
                                 f'"{template_name}": not found (pod {pod.key}, claim {entry})')
        meta = tpl.spec.metadata
        suffix = "".join(self._rng.choice(_ALPHANUM) for _ in range(5))
        claim = ResourceClaim(
            metadata=ObjectMeta(
                name=generate_name(pod.name, entry) + suffix, namespace=pod.namespace,
                labels=dict(meta.labels),
                annotations={**meta.annotations, POD_CLAIM_ANNOTATION: entry},
                owner_references=[pod.owner_reference()]),
            spec=tpl.spec.spec.model_copy(deep=True))
        created = await self.client.create(claim)
        self.created += 1
        return created.name

    # --- claims ---------------------------------------------------------------------------

    async def _sync_claim(self, key: str) -> Result | None:
        claim = self.claims.get(key)
        if claim is None:
            return None
        reserved = claim.status.reserved_for or []
        remaining = []
        for ref in reserved:
            if ref.api_group or ref.resource != "pods":
                remaining.append(ref)
                continue
            pod = self.pods.get(object_key(claim.namespace, ref.name))
            if pod is None or pod.metadata.uid != ref.uid or _done(pod):
                continue
            remaining.append(ref)
        protected = FINALIZER in claim.metadata.finalizers
        try:
            if len(remaining) < len(reserved) or (
                    not remaining and protected and claim.status.allocation is not None
                    and claim.metadata.deletion_timestamp is not None):
                work = claim.copy_deep()
                work.status.reserved_for = remaining or None
                if not remaining and protected and work.status.allocation is not None:
                    work.status.allocation = None
                    work.status.devices = None
                    self.deallocated += 1
                claim = await self.client.update_status(work)
            if protected and claim.status.allocation is None and not claim.status.reserved_for:
                work = claim.copy_deep()
                work.metadata.finalizers = [f for f in work.metadata.finalizers
                                            if f != FINALIZER]
                claim = await self.client.update(work)
        except Conflict:
            return Result(requeue=True)
        except NotFound:
            return None
        if not remaining:
            await self._delete_if_unused(claim)
        return None

    async def _delete_if_unused(self, claim: ResourceClaim) -> None:
        ref = claim.metadata.controller_ref()
        if ref is None or ref.kind != "Pod" or claim.metadata.deletion_timestamp is not None:
            return
        pod = self.pods.get(object_key(claim.namespace, ref.name))
        if pod is not None and (pod.metadata.uid != ref.uid or _done(pod)):
            try:
                await self.client.delete(ResourceClaim, claim.name, claim.namespace)
            except (NotFound, ApiError) as e:
                log.debug("deleting unused claim %s: %s", claim.key, e)
