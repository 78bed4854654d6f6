"""One pod's scheduling cycle and binding cycle (kube-scheduler's schedule_one.go).

Mixed into Scheduler; split out to keep each module readable.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import numpy as np

from phalanx.api.core import Pod
from phalanx.cluster.client import ApiError
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.runtime import Framework, num_nodes_to_score
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import (
    EVENT_ASSIGNED_POD_DELETE,
    Diagnosis,
    FitError,
    PodInfo,
    QueuedPodInfo,
)
from phalanx.scheduler.nominator import REASON as NOMINATED_REASON

if TYPE_CHECKING:
    from phalanx.scheduler.scheduler import Scheduler

log = logging.getLogger(__name__)

# CycleState key: when (scheduler's monotonic clock) the pod was assumed on its node.
STATE_ASSUMED_AT = "scheduler/assumedAt"


def score_window(rows: np.ndarray, start_row: int, k: int) -> np.ndarray:
    """The `k` (< rows.size) feasible rows scored this cycle: from the first row at or after
    `start_row`, wrapping around the end (kube's nextStartNodeIndex rotation). Slices of
    `rows`, not an index array of k: this runs for every pod."""
    start = int(np.searchsorted(rows, start_row)) % rows.size
    end = start + k
    if end <= rows.size:
        return rows[start:end]
    return np.concatenate((rows[start:], rows[:end - rows.size]))


class SchedulingCycle:
    """schedule_one and its failure/binding paths. Expects the Scheduler's attributes."""

    def schedule_one(self: Scheduler, qpi: QueuedPodInfo) -> None:
        """Run one scheduling cycle (synchronous) and start the pod's binding cycle."""
        info = qpi.info
        fw = self.frameworks[info.scheduler_name]
        snap = self.cache.snapshot
        state = CycleState()
        self.attempts += 1

        allowed, st, why = fw.run_pre_filter(state, info, snap)
        if not st.is_success:
            rows = snap.valid_rows()
            diag = Diagnosis(total_nodes=int(rows.size), pre_filter_message=st.message or "rejected by PreFilter",
                             code=st.code, stage="PreFilter")
            diag.unschedulable_plugins.add(st.plugin)
            codes = np.full(snap.n, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, dtype=np.int8)
            codes[rows] = st.code if st.is_rejected else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            self._fail(fw, state, qpi, st, FitError(info, diag, codes))
            return

        rows = fw.feasible_rows(state, info, snap, allowed)
        if state.filter_error is not None:  # kube: an Error from Filter aborts the attempt
            self._fail(fw, state, qpi, state.filter_error, None)
            return
        reserved = None
        if len(self.nominator) and rows.size:
            rows, reserved = self.nominator.filter_rows(info, snap, rows, fw.fit_vector)
        if rows.size == 0:
            fit = fw.diagnose(state, info, snap, allowed, why)
            if reserved is not None and reserved.size:
                fit.diagnosis.reason_counts[NOMINATED_REASON] = int(reserved.size)
                if fit.node_codes is not None:
                    fit.node_codes[reserved] = Code.UNSCHEDULABLE
            self._fail(fw, state, qpi, Status(Code.UNSCHEDULABLE, [fit.message()]), fit)
            return

        node = self._select(fw, state, info, rows)
        if node is None:
            return self._fail(fw, state, qpi, Status.error("scoring failed"), None)

        # Assume: the snapshot counts the pod on `node` from now on (its nomination, if any,
        # is used up: the room is now counted as requested).
        self.nominator.remove(info.key)
        state.write(STATE_ASSUMED_AT, self.client.clock.monotonic())
        if not self.cache.assume(info, node):
            self._fail(fw, state, qpi, Status.error(f"node {node} vanished"), None)
            return
        st = fw.run_reserve(state, info, node)
        if not st.is_success:
            fw.run_unreserve(state, info, node)
            self.cache.forget(info.key)
            self._fail(fw, state, qpi, st, None, stage="Reserve")
            return
        st = fw.run_permit(state, info, node)
        if not (st.is_success or st.is_wait):
            fw.run_unreserve(state, info, node)
            self.cache.forget(info.key)
            self._fail(fw, state, qpi, st, None, stage="Permit")
            return

        if st.is_wait:
            wp = self.waiting.get(info.uid)
            if wp is not None:
                wp.on_reject = lambda key=info.key: self.cache.forget(key)
        self.queue.done(info.key)
        if state.pods_to_activate:
            self.queue.activate(list(state.pods_to_activate))
        task = asyncio.get_running_loop().create_task(self._binding_cycle(fw, state, qpi, node), name=f"bind-{info.key}")
        self._binding[info.key] = task
        task.add_done_callback(lambda _t, k=info.key: self._binding.pop(k, None))

    def _select(self: Scheduler, fw: Framework, state: CycleState, info: PodInfo, rows: np.ndarray) -> str | None:
        """Score a sample of the feasible rows (percentageOfNodesToScore) and pick the best."""
        snap = self.cache.snapshot
        k = num_nodes_to_score(len(snap), fw.percentage_of_nodes_to_score or 0)
        if rows.size > k:
            # Rotate the window start across cycles so every node gets its turn.
            rows = score_window(rows, self._next_start_row, k)
            self._next_start_row = int(rows[-1]) + 1
        if rows.size == 1:
            return snap.names[int(rows[0])]
        st = fw.run_pre_score(state, info, snap, rows)
        if not st.is_success:
            log.warning("preScore failed for %s: %s", info.key, st)
            return None
        scores = fw.run_score(state, info, snap, rows)
        best = np.flatnonzero(scores == scores.max())
        pick = int(best[0]) if best.size == 1 else int(best[self._rng.randrange(best.size)])
        return snap.names[int(rows[pick])]

    # --- failures ---------------------------------------------------------------------

    def _fail(self: Scheduler, fw: Framework, state: CycleState, qpi: QueuedPodInfo, status: Status, fit: FitError | None,
              stage: str = "Filter") -> None:
        """BeforePostFilter (all, always) -> PostFilter (filter failures) -> back to the queue."""
        info = qpi.info
        self.failures += 1
        run_post = fw.run_before_post_filter(state, info, status, fit)
        diag = fit.diagnosis if fit is not None else Diagnosis(
            total_nodes=len(self.cache.snapshot), pre_filter_message=status.message, code=status.code, stage=stage
        )
        if status.plugin:
            diag.unschedulable_plugins.add(status.plugin)
        nominated = False
        if fit is not None and run_post and status.code == Code.UNSCHEDULABLE and fw.post_filter_plugins:
            result, pst = fw.run_post_filter(state, info, fit)
            if pst.is_success and result is not None and result.nominated_node:
                diag.post_filter_message = f"preemption: nominated node {result.nominated_node}"
                self.nominate(info, result.nominated_node)
                nominated = True
            elif pst.message:
                diag.post_filter_message = pst.message
        if not nominated:
            self._drop_stale_nomination(info)
        diag.attempts = qpi.attempts
        diag.timestamp = self.client.clock.now()
        diag.code = status.code
        self._diagnoses[info.key] = diag
        qpi.unschedulable_plugins = set(diag.unschedulable_plugins)
        qpi.unschedulable_plugins.discard("")
        if state.pods_to_activate:
            self.queue.activate(list(state.pods_to_activate))
        self.queue.requeue_failed(qpi, status)
        self._report_unschedulable(info.pod, diag)

    def _drop_stale_nomination(self: Scheduler, info: PodInfo) -> None:
        """A pod that failed again and was not nominated anew keeps its nominated node only
        while pods evicted for it may still be leaving it; otherwise the room is released,
        as kube-scheduler's preemption clears the nomination when it finds no candidates (and
        keeps it while a lower-priority pod on the node terminates). A stale nomination would
        hold the room against every pod of its priority or lower for good. A gang's members
        nominated together keep or release their room together: while anything is still
        leaving any of their nodes, all of it is kept."""
        group = self.nominator.group_of(info.key)
        if group is not None:
            held = self.nominator.group_nominations(group)
        else:
            node = self.nominator.nominated_node(info.key)
            held = [(info, node)] if node is not None else []
        if any(self._still_leaving(node, pod.priority) for pod, node in held):
            return
        for pod, _node in held:
            self.nominate(pod, None)
        if group is not None:
            self.nominator.drop_group(group)

    def _still_leaving(self: Scheduler, node: str, priority: int) -> bool:
        """Is a pod evicted for room, or a lower-priority pod being deleted, still on `node`?"""
        row = self.cache.snapshot.row(node)
        if row is None:
            return False
        return any(other.key in self.evicted or (
            other.pod.metadata.deletion_timestamp is not None and other.priority < priority)
            for other in self.cache.snapshot.pods_on(row).values())

    def _report_unschedulable(self: Scheduler, pod: Pod, diag: Diagnosis) -> None:
        message = diag.message()
        self.events.record(pod, "Warning", "FailedScheduling", message)
        if self.update_pod_conditions:
            cond = pod.get_condition("PodScheduled")
            if cond is None or cond.status != "False" or cond.message != message:
                self.spawn(self._set_pod_scheduled_false(pod, message), f"cond-{pod.key}")

    async def _set_pod_scheduled_false(self: Scheduler, pod: Pod, message: str) -> None:
        now = self.client.clock.now_dt().isoformat()
        # A merge patch replaces the whole list: keep the pod's other conditions.
        others = [c.to_dict() for c in pod.status.conditions if c.type != "PodScheduled"]
        mine = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                "lastTransitionTime": now}
        patch = {"status": {"conditions": [*others, mine]}}
        try:
            await self.client.patch(Pod, pod.name, patch, pod.namespace, subresource="status",
                                    returning=False)
        except ApiError as exc:
            log.debug("PodScheduled condition on %s not written: %s", pod.key, exc)

    # --- binding cycle ----------------------------------------------------------------

    async def _binding_cycle(self: Scheduler, fw: Framework, state: CycleState, qpi: QueuedPodInfo, node: str) -> None:
        info = qpi.info
        stage = "Permit"
        try:
            st = await fw.wait_on_permit(info)
            if st.is_success:
                stage = "PreBind"
                st = await fw.run_pre_bind(state, info, node)
            if st.is_success:
                stage = "Bind"
                st = await fw.run_bind(state, info, node)
        except asyncio.CancelledError:
            fw.run_unreserve(state, info, node)
            self.cache.forget(info.key)
            raise
        except Exception as exc:  # a plugin crashed: treat as an error, keep the loop alive
            log.exception("binding cycle of %s crashed", info.key)
            st = Status.error(f"internal error: {exc}")
        if st.is_success:
            self.cache.finish_binding(info.key)
            self.scheduled += 1
            self._diagnoses.pop(info.key, None)
            fw.run_post_bind(state, info, node)
            self.events.record(info.pod, "Normal", "Scheduled", f"Successfully assigned {info.key} to {node}")
            return
        self.bind_failures += 1
        fw.run_unreserve(state, info, node)
        self.cache.forget(info.key)
        # Its reservation is released (Permit timeout or reject, failed bind): as kube-scheduler
        # does, that is an assigned pod (the assumed one, on its node) deleted, for the pods
        # that wanted the room: those that failed while it was held. (Waking the others, a
        # gang's release would restart every gang blocked for room at once, to interleave and
        # fail again.) The pod itself is not in the queue yet: it cannot be moved.
        spec = info.pod.spec.model_copy(update={"node_name": node})
        released = info.pod.model_copy(update={"spec": spec})
        self.queue.on_event(EVENT_ASSIGNED_POD_DELETE, released, None,
                            failed_since=state.read(STATE_ASSUMED_AT))
        diag = Diagnosis(total_nodes=len(self.cache.snapshot), pre_filter_message=st.message, code=st.code,
                         attempts=qpi.attempts, timestamp=self.client.clock.now(), stage=stage)
        if st.plugin:
            diag.unschedulable_plugins.add(st.plugin)
        self._diagnoses[info.key] = diag
        qpi.unschedulable_plugins = set(diag.unschedulable_plugins)
        alive = self._pod_informer.get(info.key)
        if alive is None or alive.spec.node_name or alive.metadata.deletion_timestamp is not None:
            return  # deleted or bound meanwhile: nothing to retry
        if alive is not info.pod:
            qpi.info = PodInfo(alive)
        # Peers' events may have changed everything meanwhile: retry after backoff.
        self.queue.requeue_failed(qpi, st, backoff=True)
        self._report_unschedulable(alive, diag)
