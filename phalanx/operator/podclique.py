"""PodClique controller: the pods of a clique and the lifting of Phalanx's scheduling gate.

Pods are created as Grove creates them (podclique/components/pod/syncflow.go): only once the
clique's PodGang exists, with `generateName: <podclique>-` and hostname `<podclique>-<k>` for
the lowest indices k no live pod holds (Grove's index tracker: holes left by deleted pods are
filled first), each with the gate `grove.io/podgang-pending-creation`, the PodClique's labels
(`grove.io/podgang` among them: set at creation, never patched later) and the backend's
`prepare_pod` applied. How many to create or delete is counted with the expectations
(expectations.py), so a cache that lags behind a create never makes a second pod. Scaling in
deletes in Grove's deletion order (deletionsort.py: unscheduled, then not Ready, then
outdated pods first). Failed pods are replaced while the clique keeps minAvailable pods up;
below that they are left for gang termination, which recreates the whole replica.

The gate is removed -- only Phalanx's gate, never one another controller added -- when:
1. the PodGang is `Initialized` (every pod exists and is referenced), and the pod is among
   its references;
2. the backend controller has synced the PodGang (`BackendSynced`): the scheduler's objects
   exist before any pod can be scheduled;
3. for a scaled PodGang, its base PodGang is scheduled: every base PodClique has at least
   minAvailable pods scheduled (Grove's rule).
That is one write per pod (a merge patch with a resourceVersion precondition): Kubernetes
offers no bulk gate removal, so this is the floor for gates. A backend profile with
`podSchedulingGate: false` gets its base PodGangs' pods without the gate: phalanx-scheduler's
PreEnqueue holds the pods of a PodGang not yet Initialized and BackendSynced, and
kube-scheduler's GangScheduling (default-scheduler with gangScheduling) those of a PodGroup
that does not exist or lacks minCount pods.
"""

from __future__ import annotations

import logging
import re

from phalanx.api import labels as L
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodGang
from phalanx.cluster.client import AlreadyExists, ApiError, NotFound
from phalanx.cluster.controller import (
    Controller,
    PermanentError,
    Result,
    map_from_label,
    permanent_reason,
)
from phalanx.cluster.objects import object_key

from . import builders, lifecycle_events, naming, podindex
from .conditions import BACKEND_SYNCED
from .context import IDX_BASE_PODGANG, OperatorContext, bounded, first_error, requeue_on_conflict
from .deletionsort import deletion_order
from .expectations import ExpectationsStore
from .gate_lifts import PendingGateLifts
from .rollingupdate_pods import PodRollingUpdater
from .updateprogress import in_progress, is_auto_update

log = logging.getLogger(__name__)

REASON_FAILED_CREATE = "FailedCreate"  # as the ReplicaSet and Job controllers say it


def owned_pods(ctx: OperatorContext, pclq: PodClique) -> dict[str, Pod]:
    """This incarnation's pods by name, terminating ones included (a recreated PodClique must
    not adopt the pods of the one before it, which the garbage collector is about to remove)."""
    uid = pclq.metadata.uid
    out: dict[str, Pod] = {}
    for pod in ctx.pods_of(pclq.key):
        ref = pod.metadata.controller_ref()
        if ref is not None and ref.uid == uid:
            out[pod.name] = pod
    return out


def expected_template_hash(pclq: PodClique, current_generation_hash: str | None) -> str | None:
    """The template hash an up-to-date pod carries (Grove's getExpectedPodTemplateHash)."""
    up = pclq.status.update_progress
    if up is not None and current_generation_hash is not None \
            and up.pod_clique_set_generation_hash == current_generation_hash:
        return up.pod_template_hash
    return pclq.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH)


def needs_gate(backend: object, pclq: PodClique) -> bool:
    """Whether this clique's pods are created with Phalanx's gate. Without it (profile
    `podSchedulingGate: false`, allowed only for schedulers that hold the pods of an
    incomplete gang themselves) one write per pod is saved. Pods of a scaled PodGang
    keep it: they also wait for their base PodGang to be scheduled, which only we track."""
    config = getattr(backend, "config", None)
    if getattr(config, "pod_scheduling_gate", True):
        return True
    return L.LABEL_BASE_PODGANG in pclq.metadata.labels


def _by_hostname(err: ApiError, pod: Pod) -> None:
    """The API server names a refused pod by the name it generated for this attempt
    (`pods "<pclq>-x7k2p" is forbidden: ...`): a different name on every retry, so the same
    refusal would read as a new error each time and be reported again. Name it by its
    hostname (`<pclq>-<index>`), which a retry keeps."""
    prefix, host = pod.metadata.generate_name, pod.spec.hostname
    if prefix and host and isinstance(getattr(err, "message", None), str):
        err.message = re.sub(re.escape(prefix) + r"[a-z0-9]{5}\b", host, err.message)
        err.args = (err.message,)


def gang_ready_for_pods(gang: PodGang) -> bool:
    return gang.is_initialized and gang.is_condition_true(BACKEND_SYNCED)


def _pclq_spec_changed(old: PodClique, new: PodClique) -> bool:
    return (old.metadata.generation != new.metadata.generation
            or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp)


def _scheduled_changed(old: PodClique, new: PodClique) -> bool:
    return old.status.scheduled_replicas != new.status.scheduled_replicas


def _pod_changed(old: Pod, new: Pod) -> bool:
    return (old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
            or old.spec.scheduling_gates != new.spec.scheduling_gates
            or (new.status.phase == "Failed") != (old.status.phase == "Failed"))


def _update_changed(old: PodClique, new: PodClique) -> bool:
    return old.status.update_progress != new.status.update_progress or (
        in_progress(new) and old.status.ready_replicas != new.status.ready_replicas)


def _gang_changed(old: PodGang, new: PodGang) -> bool:
    return (old.metadata.generation != new.metadata.generation
            or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
            or old.is_initialized != new.is_initialized
            or old.is_condition_true(BACKEND_SYNCED) != new.is_condition_true(BACKEND_SYNCED))


class PodCliqueController:
    def __init__(self, ctx: OperatorContext, workers: int = 4) -> None:
        self.ctx = ctx
        self.controller = Controller("podclique", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.cliques, predicate=_pclq_spec_changed)
        c.watch(ctx.pods, map_from_label(L.LABEL_PODCLIQUE), predicate=_pod_changed)
        self.expectations = ExpectationsStore(ctx.client.clock.monotonic)
        self.gate_lifts = PendingGateLifts()
        ctx.pods.add_handler(on_delete=self._pod_deleted)
        ctx.cliques.add_handler(on_delete=lambda pclq: self.expectations.forget(
            pclq.metadata.uid or ""))
        c.watch(ctx.gangs, self._cliques_of_gang, predicate=_gang_changed)
        # A rolling update advances on pod readiness and on its own progress.
        self.updater = PodRollingUpdater(ctx, on_deleted=self._expect_deletion)
        c.watch(ctx.pods, map_from_label(L.LABEL_PODCLIQUE), predicate=self._ready_while_updating)
        c.watch(ctx.cliques, predicate=_update_changed)
        # A base PodGang getting scheduled releases the cliques of its scaled PodGangs.
        c.watch(ctx.cliques, self._dependents_of_clique, predicate=_scheduled_changed)

    def _pod_deleted(self, pod: Pod) -> None:
        self.gate_lifts.forget(pod)
        ref = pod.metadata.controller_ref()
        if ref is not None and ref.uid:
            self.expectations.observe_deletion(ref.uid, pod.metadata.uid or "")

    def _expect_deletion(self, pclq: PodClique, pod: Pod) -> None:
        self.expectations.expect_deletion(pclq.metadata.uid or "", pod.metadata.uid or "")

    def _ready_while_updating(self, old: Pod, new: Pod) -> bool:
        if old.is_ready == new.is_ready and old.status.phase == new.status.phase:
            return False
        name = new.metadata.labels.get(L.LABEL_PODCLIQUE)
        pclq = self.ctx.cliques.get(object_key(new.metadata.namespace, name)) if name else None
        return pclq is not None and in_progress(pclq)

    def _cliques_of_gang(self, gang: PodGang) -> list[str]:
        ns = gang.metadata.namespace
        return [object_key(ns, g.name) for g in gang.spec.pod_groups]

    def _dependents_of_clique(self, pclq: PodClique) -> list[str]:
        gang = pclq.metadata.labels.get(L.LABEL_PODGANG)
        if not gang:
            return []
        return self.ctx.cliques.keys_by_index(IDX_BASE_PODGANG,
                                             object_key(pclq.metadata.namespace, gang))

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pclq = ctx.cliques.get(key)
        if pclq is None or pclq.metadata.deletion_timestamp is not None:
            return None
        gang_name = pclq.metadata.labels.get(L.LABEL_PODGANG)
        gang = ctx.gangs.get(object_key(pclq.namespace, gang_name)) if gang_name else None
        if gang is None or gang.metadata.deletion_timestamp is not None:
            return None  # PodGang first: its creation event brings us back
        pods = owned_pods(ctx, pclq)
        exp_key = pclq.metadata.uid or ""
        self.expectations.sync(
            exp_key, [p.metadata.uid or "" for p in pods.values() if not p.is_deleting],
            [p.metadata.uid or "" for p in pods.values() if p.is_deleting])
        # Grove's count: pods seen + creates expected - replicas - deletes expected.
        diff = (len(pods) + len(self.expectations.creates(exp_key)) - pclq.spec.replicas
                - len(self.expectations.deletes(exp_key)))
        errors = [await self._create_missing(pclq, pods, -diff) if diff < 0 else None,
                  await self._delete_excess(pclq, pods, diff) if diff > 0 else None,
                  await self._replace_failed(pclq, pods), await self._roll(pclq, pods)]
        errors.append(await self._lift_gates(pclq, gang, pods))
        err = next((e for e in errors if e is not None), None)
        if err is not None:
            raise err
        return None

    async def _roll(self, pclq: PodClique, pods: dict[str, Pod]) -> BaseException | None:
        """RollingRecreate of a standalone clique (rollingupdate_pods.py); a scaling group
        replaces its PodCliques whole instead."""
        if not in_progress(pclq) or L.LABEL_PODCLIQUESCALINGGROUP in pclq.metadata.labels:
            return None
        pcs = self.ctx.pcs_of(pclq)
        if pcs is None or not is_auto_update(pcs):
            return None
        try:
            await self.updater.sync(pclq, pods)
        except Exception as e:  # noqa: BLE001 -- reported with the other steps' errors
            return e
        return None

    async def _create_missing(self, pclq: PodClique, pods: dict[str, Pod], count: int
                              ) -> BaseException | None:
        ctx = self.ctx
        exp_key = pclq.metadata.uid or ""
        try:
            missing = podindex.available_indices(
                pods.values(), count, self.expectations.creates(exp_key).values())
        except podindex.PodIndexError as e:
            return e
        backend = ctx.registry.get_or_default(pclq.spec.pod_spec.scheduler_name)
        factory = builders.PodFactory(pclq, group_pods=self._group_pods(pclq),
                                      pcs=ctx.pcs_of(pclq))

        gate = needs_gate(backend, pclq)

        async def create(k: int) -> str | None:
            pod = factory(k)
            backend.prepare_pod(pod)
            if not gate:
                pod.remove_gate(L.GATE_PODGANG_PENDING_CREATION)
            try:
                # Built for this write alone: an in-process server may keep it as it is.
                created = await ctx.client.create(pod, returning="metadata", hand_over=True)
            except AlreadyExists:
                return None  # a generated name collided: the next reconcile counts again
            except ApiError as e:
                _by_hostname(e, pod)
                raise
            # Recorded even if its ADDED event came first: `sync` then settles it.
            self.expectations.expect_creation(exp_key, created.uid or "", k)
            return created.name or pod.name

        results = await bounded([lambda k=k: create(k) for k in missing],
                                ctx.tunables.write_concurrency)
        lifecycle_events.pods_created(ctx.recorder, pclq,
                                      [r for r in results if isinstance(r, str)])
        err = first_error(results)
        if err is not None and permanent_reason(err) is not None:
            # The API server refuses the pod itself (Invalid, Forbidden): reported once on
            # the PodClique, as a ReplicaSet reports FailedCreate, and retried with backoff.
            failed = sum(isinstance(r, BaseException) for r in results)
            return PermanentError(REASON_FAILED_CREATE, f"creating {failed} of {len(missing)} "
                                  f"pod(s) failed: {getattr(err, 'message', err)}")
        if err is not None:
            ctx.recorder.warning(pclq, "PodCreateFailed", f"creating pods failed: {err}")
        return err

    def _group_pods(self, pclq: PodClique) -> int | None:
        if L.LABEL_PODCLIQUESCALINGGROUP not in pclq.metadata.labels:
            return None
        pcs = self.ctx.pcs_of(pclq)
        group = pcs.scaling_group_of(_clique_name(pclq, pcs.name)) if pcs else None
        if pcs is None or group is None:
            return None
        return sum(c.spec.replicas for c in pcs.spec.template.cliques
                   if c.name in group.clique_names)

    async def _delete_excess(self, pclq: PodClique, pods: dict[str, Pod], count: int
                             ) -> BaseException | None:
        """Up to `count` pods in Grove's deletion order, among those whose deletion has not
        been asked for already (a terminating pod still reports Ready: Grove's
        selectExcessPodsToDelete)."""
        exp_key = pclq.metadata.uid or ""
        live = [p for p in pods.values() if not p.is_deleting
                and not self.expectations.has_delete(exp_key, p.metadata.uid or "")]
        excess = min(count, len(live) - pclq.spec.replicas)
        if excess <= 0:
            return None
        pcs = self.ctx.pcs_of(pclq)
        expected = expected_template_hash(
            pclq, pcs.status.current_generation_hash if pcs is not None else None)
        doomed = deletion_order(live, expected)[:excess]

        async def delete(pod: Pod) -> str | None:
            try:
                await self.ctx.client.delete(Pod, pod.name, pclq.namespace,
                                             uid=pod.metadata.uid)
            except NotFound:
                self.expectations.observe_deletion(exp_key, pod.metadata.uid or "")
                return None
            self.expectations.expect_deletion(exp_key, pod.metadata.uid or "")
            return pod.name

        results = await bounded([lambda p=p: delete(p) for p in doomed],
                                self.ctx.tunables.write_concurrency)
        lifecycle_events.children_deleted(self.ctx.recorder, pclq, "Pod",
                                          [r for r in results if isinstance(r, str)])
        return first_error(results)

    async def _replace_failed(self, pclq: PodClique, pods: dict[str, Pod]
                              ) -> BaseException | None:
        """Failed pods of a clique that still has minAvailable others are deleted, to be
        recreated (as a ReplicaSet would). Below minAvailable they stay: the whole replica is
        gang-terminated after terminationDelay instead of patching a half-dead gang."""
        exp_key = pclq.metadata.uid or ""
        live = [p for p in pods.values() if p.metadata.deletion_timestamp is None
                and not self.expectations.has_delete(exp_key, p.metadata.uid or "")]
        failed = [p for p in live if p.status.phase == "Failed"]
        need = pclq.spec.min_available if pclq.spec.min_available is not None \
            else pclq.spec.replicas
        if not failed or len(live) - len(failed) < need:
            return None
        self.ctx.recorder.normal(pclq, "ReplacingFailedPods", f"replacing {len(failed)} failed "
                                 f"pod(s); {len(live) - len(failed)}/{need} needed are up")

        async def delete(pod: Pod) -> None:
            try:
                await self.ctx.client.delete(Pod, pod.name, pod.namespace,
                                             uid=pod.metadata.uid)
            except NotFound:
                return
            self._expect_deletion(pclq, pod)

        return first_error(await bounded([lambda p=p: delete(p) for p in failed],
                                         self.ctx.tunables.write_concurrency))

    async def _lift_gates(self, pclq: PodClique, gang: PodGang, pods: dict[str, Pod]
                          ) -> BaseException | None:
        gated = [p for p in pods.values() if p.metadata.deletion_timestamp is None
                 and p.has_gate(L.GATE_PODGANG_PENDING_CREATION)]
        if not gated or not gang_ready_for_pods(gang):
            return None
        group = gang.group(pclq.name)
        referenced = {r.name for r in group.pod_references} if group else set()
        base = pclq.metadata.labels.get(L.LABEL_BASE_PODGANG)
        if base is not None and not self._base_scheduled(pclq.namespace, base):
            return None
        ready = [p for p in gated if p.name in referenced and not self.gate_lifts.pending(p)]
        if not ready:
            return None

        async def lift(pod: Pod) -> None:
            gates = [g.to_dict() for g in pod.spec.scheduling_gates
                     if g.name != L.GATE_PODGANG_PENDING_CREATION]
            patch = {"metadata": {"resourceVersion": pod.metadata.resource_version},
                     "spec": {"schedulingGates": gates or None}}
            try:
                await self.ctx.client.patch(Pod, pod.name, patch, pod.namespace, returning=False)
            except NotFound:
                return
            self.gate_lifts.lifted(pod)

        return first_error(await bounded([lambda p=p: lift(p) for p in ready],
                                         self.ctx.tunables.write_concurrency))

    def _base_scheduled(self, namespace: str | None, base_name: str) -> bool:
        base = self.ctx.gangs.get(object_key(namespace, base_name))
        if base is None or not base.spec.pod_groups:
            return False
        for g in base.spec.pod_groups:
            member = self.ctx.cliques.get(object_key(namespace, g.name))
            if member is None or member.status.scheduled_replicas < g.min_replicas:
                return False
        return True


def _clique_name(pclq: PodClique, pcs_name: str) -> str:
    """The template clique name of a PodClique (its name's last segment after the prefix)."""
    pcsg = pclq.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP)
    j = pclq.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX)
    if pcsg and j is not None:
        prefix = f"{pcsg}-{j}-"
    else:
        prefix = f"{pcs_name}-{naming.replica_of(pclq.metadata.labels)}-"
    return pclq.name.removeprefix(prefix)
