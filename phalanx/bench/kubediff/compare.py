"""Parse kube-scheduler's `0/N nodes are available: ...` messages and compare two outcomes.

kube-scheduler 1.36 (pkg/scheduler/framework/types.go, FitError.Error) writes

    0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s). no new
    claims to deallocate, preemption: 0/5 nodes are available: 5 Preemption is not helpful
    for scheduling.

or, when a PreFilter plugin rejects the pod, its message instead of the per-node counts:

    0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: ...

`parse_message` splits that into the node total, the per-reason node counts, the PreFilter
message and what the PostFilter plugins said after it (kube 1.36 with DRA on writes
"no new claims to deallocate, preemption: ..."), whose "preemption: ..." part is itself
parsed the same way when it has that form.
A reason is "<count> <text>"; reasons are joined by ", " and a count never starts a text,
so a comma inside a reason (none of kube's has one) does not split it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_HEAD = re.compile(r"^0/(\d+) nodes are available(?::\s*|\.\s*|$)")
_PART = re.compile(r"^(\d+) (\S.*)$")
_SPLIT = re.compile(r", (?=\d+ \S)")
_TAIL = "preemption: "


@dataclass
class Parsed:
    total: int
    reasons: dict[str, int] = field(default_factory=dict)
    prefilter: str = ""  # a PreFilter plugin's message (no per-node counts then)
    postfilter: str = ""  # what the PostFilter plugins said, as written
    preemption: str = ""  # its "preemption: ..." part, without the word
    preemption_parsed: Parsed | None = None  # that tail, when it is itself "0/N ..."

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"total": self.total, "reasons": dict(sorted(self.reasons.items()))}
        if self.prefilter:
            out["prefilter"] = self.prefilter
        if self.preemption:
            out["preemption"] = self.preemption
        return out


class MessageError(ValueError):
    pass


def parse_message(message: str) -> Parsed:
    """A `0/N nodes are available: ...` message; MessageError for anything else."""
    text = message.strip()
    m = _HEAD.match(text)
    if m is None:
        raise MessageError(f"no '0/N nodes are available' head in {message!r}")
    rest = text[m.end():]
    # "<reasons or PreFilter message>. <PostFilter messages>": no reason holds ". ".
    cut = rest.find(". ")
    body, post = (rest[:cut], rest[cut + 2:].strip()) if cut >= 0 else (rest, "")
    body = body.strip().removesuffix(".").strip()
    parsed = Parsed(total=int(m.group(1)), postfilter=post)
    if body:
        prefilter: list[str] = []
        for part in _SPLIT.split(body):
            pm = _PART.match(part.strip())
            if pm is None:
                prefilter.append(part.strip())
                continue
            reason = pm.group(2).strip()
            parsed.reasons[reason] = parsed.reasons.get(reason, 0) + int(pm.group(1))
        parsed.prefilter = ", ".join(prefilter)
    at = post.find(_TAIL)
    if at >= 0:
        parsed.preemption = post[at + len(_TAIL):].strip()
        if parsed.preemption.startswith("0/"):
            try:
                parsed.preemption_parsed = parse_message(parsed.preemption)
            except MessageError:
                pass
    return parsed


@dataclass
class Outcome:
    """What one scheduler did with the pod: bound it (to `node`) or left it Unschedulable
    with `message` (the PodScheduled condition's)."""

    scheduler: str
    scheduled: bool
    node: str = ""
    message: str = ""
    reason: str = ""  # the PodScheduled condition's reason when not scheduled
    pinned_to: str = ""  # the pod was pinned to this node (feasibility re-check)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scheduled": self.scheduled}
        for key in ("node", "message", "reason", "pinned_to"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        out["seconds"] = round(self.seconds, 3)
        return out


# Differences that break agreement, and one that is only recorded.
SCHEDULABILITY = "schedulability"  # one bound the pod, the other did not
TOTAL = "total_nodes"  # different N in 0/N
REASONS = "reasons"  # different per-reason node counts (or reason texts)
PREFILTER = "prefilter"  # different PreFilter message
UNPARSABLE = "unparsable"  # an Unschedulable message not in kube's form
INFEASIBLE_NODE = "infeasible_node"  # kube rejects the node phalanx chose
PREEMPTION = "preemption"  # both have a comparable preemption tail and it differs
BLOCKING = (SCHEDULABILITY, TOTAL, REASONS, PREFILTER, UNPARSABLE, INFEASIBLE_NODE)


@dataclass
class Difference:
    kind: str
    detail: str
    blocking: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "detail": self.detail, "blocking": self.blocking}


def compare(kube: Outcome, phalanx: Outcome, node_check: str = "") -> list[Difference]:
    """The differences between kube-scheduler's and phalanx-scheduler's outcome of one case;
    `node_check` is "infeasible: <kube's message>" when kube rejected phalanx's node."""
    if kube.scheduled != phalanx.scheduled:
        who = "kube-scheduler" if kube.scheduled else "phalanx-scheduler"
        other = phalanx if kube.scheduled else kube
        return [Difference(SCHEDULABILITY, f"only {who} bound the pod; the other said: "
                                           f"{other.message or other.reason or '(nothing)'}")]
    out: list[Difference] = []
    if node_check.startswith("infeasible"):
        out.append(Difference(INFEASIBLE_NODE, f"phalanx chose {phalanx.node}; kube-scheduler "
                                               f"pinned there: {node_check}"))
    if kube.scheduled:
        return out
    try:
        k = parse_message(kube.message)
        p = parse_message(phalanx.message)
    except MessageError as err:
        return [*out, Difference(UNPARSABLE, str(err))]
    if k.total != p.total:
        out.append(Difference(TOTAL, f"kube 0/{k.total}, phalanx 0/{p.total}"))
    if k.reasons != p.reasons:
        out.append(Difference(REASONS, reasons_diff(k.reasons, p.reasons)))
    if k.prefilter != p.prefilter:
        out.append(Difference(PREFILTER, f"kube {k.prefilter!r}, phalanx {p.prefilter!r}"))
    if k.preemption and p.preemption:
        kt, pt = k.preemption_parsed, p.preemption_parsed
        if kt is None or pt is None:
            if k.preemption != p.preemption:
                out.append(Difference(PREEMPTION, f"kube {k.preemption!r}, phalanx "
                                                  f"{p.preemption!r}", blocking=False))
        elif (kt.total, kt.reasons, kt.prefilter) != (pt.total, pt.reasons, pt.prefilter):
            out.append(Difference(PREEMPTION, f"kube {kt.to_dict()}, phalanx {pt.to_dict()}",
                                  blocking=False))
    return out


def reasons_diff(kube: dict[str, int], phalanx: dict[str, int]) -> str:
    """`only kube: 3 x; only phalanx: 3 y; differ: z kube 2 phalanx 1` (sorted)."""
    parts = []
    only_k = [f"{n} {r}" for r, n in sorted(kube.items()) if r not in phalanx]
    only_p = [f"{n} {r}" for r, n in sorted(phalanx.items()) if r not in kube]
    differ = [f"{r}: kube {kube[r]}, phalanx {phalanx[r]}" for r in sorted(kube)
              if r in phalanx and kube[r] != phalanx[r]]
    if only_k:
        parts.append("only kube: " + "; ".join(only_k))
    if only_p:
        parts.append("only phalanx: " + "; ".join(only_p))
    if differ:
        parts.append("differ: " + "; ".join(differ))
    return " | ".join(parts)
