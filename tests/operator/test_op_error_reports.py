"""Error reports stay bounded (issue 22 item 3): a write the API server refuses, echoing the
refused object back in its message (as a real server's field errors do: `Invalid value:
"<the object>"`), fails 100 times in a row. The object's ReconcileFailure condition, its
lastErrors entry, the Event and every log line hold the cause once (the field and the
reason), never the echoed object or the previous report, and stay the same size."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from op_harness import NS, make_pcs

from phalanx.api.base import get_condition
from phalanx.api.core import Event
from phalanx.api.crdtypes import MAX_CONDITION_MESSAGE
from phalanx.api.errors import MAX_CAUSE_CHARS
from phalanx.api.grove import PodCliqueSet, PodGang
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.operator.errors import CONDITION_RECONCILE_FAILURE

REPEATS = 100
CAUSE = 'strict decoding error: unknown field "spec.podgroups[0].lastScheduled"'


class EchoingCluster(MemoryCluster):
    """Refuses every PodGang creation as a strict API server refuses an unknown field, with
    the owning PodCliqueSet as stored (its previous report included) echoed in the message."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0

    async def create(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(obj, PodGang):
            self.refused += 1
            owner = await self.get(PodCliqueSet, obj.metadata.labels.get(
                "app.kubernetes.io/part-of", ""), obj.namespace)
            echoed = json.dumps(json.dumps(owner.to_dict()))
            raise Invalid(f'PodGang.scheduler.grove.io "{obj.name}" is invalid: [<nil>: '
                          f"Invalid value: {echoed}: {CAUSE}]", kind="PodGang", name=obj.name)
        return await super().create(obj, *args, **kwargs)


def test_a_refusal_repeated_100_times_is_reported_once_and_bounded(
        caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> tuple[Any, ...]:
        cluster = EchoingCluster()
        op = OperatorManager(cluster)
        await op.start()
        await cluster.create(make_pcs("echo", [("a", 2)]))
        messages: set[str] = set()
        sizes: list[int] = []
        while cluster.refused < REPEATS:
            await asyncio.sleep(1001)  # past the longest backoff: one more refusal each
            await op.wait_idle(timeout=60)
            pcs = await cluster.get(PodCliqueSet, "echo", NS)
            cond = get_condition(pcs.status.conditions, CONDITION_RECONCILE_FAILURE)
            if cond is not None:
                messages.add(cond.message)
                sizes.append(len(json.dumps(pcs.to_dict())))
                # Fail on the first change (unbounded, each report holds the previous one
                # twice over, escaped: the object would grow exponentially).
                assert len(messages) == 1, sorted(len(m) for m in messages)
        await op.recorder.flush()
        events = [e for e in (await cluster.list(Event, NS)).items
                  if e.involved_object.name == "echo" and e.type == "Warning"]
        pcs = await cluster.get(PodCliqueSet, "echo", NS)
        await op.stop()
        return cluster.refused, messages, sizes, events, pcs

    with caplog.at_level(logging.INFO):
        refused, messages, sizes, events, pcs = run_virtual(main)
    assert refused >= REPEATS
    [message] = messages  # the same report after every refusal: written once
    assert len(message) <= MAX_CAUSE_CHARS < MAX_CONDITION_MESSAGE
    assert message.count(CAUSE) == 1 and "Invalid value" in message
    assert "apiVersion" not in message and CONDITION_RECONCILE_FAILURE not in message
    assert max(sizes) == min(sizes)  # the object does not grow
    [last] = pcs.status.last_errors
    assert last.description == message
    assert len(events) == 1 and events[0].message == message
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("phalanx.")]
    refusals = [line for line in lines if CAUSE in line]
    assert len(refusals) >= REPEATS  # one line per retry ...
    assert max(len(line) for line in lines) <= MAX_CAUSE_CHARS + 200  # ... each one short
