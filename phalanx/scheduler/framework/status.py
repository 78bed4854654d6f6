"""Plugin results: a `Code` and the human reasons behind it (kube-scheduler's framework.Status)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Code(IntEnum):
    """What a plugin decided. Order matters: higher values are "worse" outcomes for merging."""

    SUCCESS = 0
    # Skip: the plugin has nothing to do for this pod (PreFilter/PreScore: its Filter/Score
    # is skipped for this cycle; Bind: let the next binder try).
    SKIP = 1
    # Wait: Permit only; the pod waits in the waiting-pods map until allowed or rejected.
    WAIT = 2
    # Unschedulable: the pod does not fit now; preemption (PostFilter) may help.
    UNSCHEDULABLE = 3
    # UnschedulableAndUnresolvable: preemption cannot help (e.g. a taint, a selector).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 4
    # Error: an internal failure; the pod goes to backoff, never to the unschedulable pool.
    ERROR = 5


@dataclass(slots=True)
class Status:
    """The result of one plugin call. `Status()` is success.

    `plugin` names the plugin that produced a non-success status (the runtime fills it in),
    so failure handling knows which plugins to ask when cluster events arrive.
    """

    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""

    @classmethod
    def success(cls) -> Status:
        return cls()

    @classmethod
    def skip(cls, reason: str = "") -> Status:
        # Most PreFilter and PreScore plugins skip most pods: one shared, reasonless Skip
        # (with_plugin copies it rather than naming a plugin on it).
        return cls(Code.SKIP, [reason]) if reason else _SKIP

    @classmethod
    def wait(cls, reason: str = "") -> Status:
        return cls(Code.WAIT, [reason] if reason else [])

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, list(reasons), plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons), plugin)

    @classmethod
    def error(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, list(reasons), plugin)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    @property
    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    @property
    def is_rejected(self) -> bool:
        """Unschedulable or UnschedulableAndUnresolvable."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    @property
    def is_error(self) -> bool:
        return self.code == Code.ERROR

    @property
    def message(self) -> str:
        return ", ".join(r for r in self.reasons if r)

    def with_plugin(self, plugin: str) -> Status:
        if not self.plugin:
            if self is _SKIP:
                return Status(Code.SKIP, [], plugin)
            self.plugin = plugin
        return self

    def __str__(self) -> str:
        head = self.code.name
        if self.plugin:
            head += f"({self.plugin})"
        return f"{head}: {self.message}" if self.reasons else head


_SKIP = Status(Code.SKIP)
