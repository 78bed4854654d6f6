"""Where the backend controller's verdict waits for the PodGang's one status write.

The PodGang's status has one writer in the operator, the PodGang controller (podgang.py).
The backend controller (podgang_backend.py) decides `BackendSynced` but does not write it:
it reports the verdict here, and the PodGang controller folds it into the write it makes
anyway (Initialized, Scheduled, Ready). Two controllers writing the same status made two
writes where one does, and each could overwrite the other's condition from a stale copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from phalanx.api.base import Condition


@dataclass(frozen=True, slots=True)
class SyncVerdict:
    ok: bool
    reason: str
    message: str


class BackendSyncState:
    """PodGang key -> the backend controller's latest verdict, until the PodGang is gone."""

    def __init__(self) -> None:
        self._verdicts: dict[str, SyncVerdict] = {}
        self._listeners: list[Callable[[str], None]] = []

    def on_change(self, listener: Callable[[str], None]) -> None:
        """`listener(key)` runs when a PodGang's verdict changes (the PodGang controller
        enqueues the gang)."""
        self._listeners.append(listener)

    def report(self, key: str, verdict: SyncVerdict, shown: Condition | None) -> bool:
        """Record a verdict for the PodGang `key`, whose status now shows `shown`; True when
        it differs from that or from what was last reported (so the caller emits its Event
        once per change)."""
        previous = self._verdicts.get(key)
        if previous is None and shown is not None:
            previous = SyncVerdict(shown.status == "True", shown.reason or "", shown.message or "")
        self._verdicts[key] = verdict
        if previous == verdict:
            return False
        for listener in self._listeners:
            listener(key)
        return True

    def verdict(self, key: str) -> SyncVerdict | None:
        return self._verdicts.get(key)

    def forget(self, key: str) -> None:
        self._verdicts.pop(key, None)
