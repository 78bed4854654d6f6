"""Fault injection for the embedded cluster: failed requests and dropped watches.

Controllers must survive what a real API server does under load: 500s, optimistic-lock
conflicts, and watch connections that end. `MemoryCluster.faults` injects those from a
seeded `random.Random`, so a failing run replays exactly with the same seed.

    cluster.faults.fail_writes(0.05, verbs={"update"}, kinds={Pod}, error=Conflict)
    cluster.faults.drop_watches(0.01)
    cluster.faults.add_hook(lambda verb, kind, key: ServerError("boom") if key == "ns/x" else None)
    print(cluster.faults.summary())
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .client import ApiError, Conflict, ServerError

WRITE_VERBS = frozenset({"create", "update", "update_status", "patch", "delete", "bind"})
READ_VERBS = frozenset({"get", "list", "watch"})

# (verb, kind, key) -> an error to raise, or None to let the request through.
FaultHook = Callable[[str, str, str], ApiError | None]


def _kind_names(kinds: Iterable[type | str] | None) -> frozenset[str] | None:
    if kinds is None:
        return None
    return frozenset(k if isinstance(k, str) else k.KIND  # type: ignore[attr-defined]
                     for k in kinds)


@dataclass(slots=True)
class FaultRule:
    """Fail matching requests with probability `rate`, at most `times` times (None: no limit)."""

    rate: float
    verbs: frozenset[str]
    kinds: frozenset[str] | None
    error: type[ApiError]
    times: int | None = None

    def applies(self, verb: str, kind: str) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        return verb in self.verbs and (self.kinds is None or kind in self.kinds)


class FaultInjector:
    """Seeded fault rules; `injected` counts what was injected, by "verb Kind: Error"."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.rules: list[FaultRule] = []
        self.hooks: list[FaultHook] = []
        self.watch_drop_rate = 0.0
        self.watch_drop_kinds: frozenset[str] | None = None
        self.injected: Counter[str] = Counter()

    # ------------------------------------------------------------------ configuring

    def fail_requests(
        self,
        rate: float,
        *,
        verbs: Iterable[str],
        kinds: Iterable[type | str] | None = None,
        error: type[ApiError] = ServerError,
        times: int | None = None,
    ) -> FaultRule:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"fault rate must be within [0, 1], got {rate}")
        verb_set = frozenset(verbs)
        unknown = verb_set - WRITE_VERBS - READ_VERBS
        if unknown:
            raise ValueError(f"unknown verbs {sorted(unknown)}; known: "
                             f"{sorted(WRITE_VERBS | READ_VERBS)}")
        rule = FaultRule(rate, verb_set, _kind_names(kinds), error, times)
        self.rules.append(rule)
        return rule

    def fail_writes(
        self,
        rate: float,
        *,
        verbs: Iterable[str] | None = None,
        kinds: Iterable[type | str] | None = None,
        error: type[ApiError] = ServerError,
        times: int | None = None,
    ) -> FaultRule:
        """Fail writes (all write verbs unless `verbs` narrows them) with `error`."""
        return self.fail_requests(
            rate, verbs=WRITE_VERBS if verbs is None else verbs, kinds=kinds, error=error,
            times=times,
        )

    def drop_watches(self, rate: float, *, kinds: Iterable[type | str] | None = None) -> None:
        """End a watch stream with probability `rate` per delivered event (clients re-watch)."""
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"watch drop rate must be within [0, 1], got {rate}")
        self.watch_drop_rate = rate
        self.watch_drop_kinds = _kind_names(kinds)

    def add_hook(self, hook: FaultHook) -> FaultHook:
        """Exact control for tests: `hook(verb, kind, key)` returns an error to raise or None."""
        self.hooks.append(hook)
        return hook

    def remove(self, rule_or_hook: FaultRule | FaultHook) -> None:
        if isinstance(rule_or_hook, FaultRule):
            self.rules.remove(rule_or_hook)
        else:
            self.hooks.remove(rule_or_hook)

    def clear(self) -> None:
        """Remove every rule and hook (counters are kept)."""
        self.rules.clear()
        self.hooks.clear()
        self.watch_drop_rate = 0.0
        self.watch_drop_kinds = None

    @property
    def active(self) -> bool:
        return bool(self.rules or self.hooks)

    # ------------------------------------------------------------------ used by the cluster

    def check(self, verb: str, kind: str, key: str) -> None:
        """Raise the injected error for this request, if any."""
        for hook in self.hooks:
            err = hook(verb, kind, key)
            if err is not None:
                self.injected[f"{verb} {kind}: {type(err).__name__} (hook)"] += 1
                raise err
        for rule in self.rules:
            if rule.applies(verb, kind) and self.rng.random() < rule.rate:
                if rule.times is not None:
                    rule.times -= 1
                self.injected[f"{verb} {kind}: {rule.error.__name__}"] += 1
                if rule.error is Conflict:
                    raise Conflict(
                        f"Operation cannot be fulfilled on {kind} {key!r}: injected conflict",
                        kind=kind, name=key,
                    )
                raise rule.error(f"injected fault on {verb} {kind} {key!r}", kind=kind, name=key)

    def drop_watch(self, kind: str) -> bool:
        """Whether to end a watch stream now (called once per delivered event)."""
        if self.watch_drop_rate <= 0.0:
            return False
        if self.watch_drop_kinds is not None and kind not in self.watch_drop_kinds:
            return False
        if self.rng.random() < self.watch_drop_rate:
            self.injected[f"watch {kind}: dropped"] += 1
            return True
        return False

    @property
    def total(self) -> int:
        return sum(self.injected.values())

    def summary(self) -> str:
        if not self.injected:
            return "no faults injected"
        lines = [f"{n:6d}  {what}" for what, n in sorted(self.injected.items())]
        return f"{self.total} faults injected:\n" + "\n".join(lines)
