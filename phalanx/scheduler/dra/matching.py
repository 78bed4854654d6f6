"""What decides whether a device may serve a request: selector verdicts (cached per device
record), device taints against a request's tolerations, and `matchAttribute` constraints."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from phalanx.api.devicecel import CELError, compile_selector, relevant_key
from phalanx.api.resource import DeviceToleration, ResourceClaim

from .pools import DeviceRec

if TYPE_CHECKING:
    from .allocator import _Req


class MatchAttribute:
    """A `matchAttribute` constraint: every device of the requests it names (all, when it
    names none) has the same value of the attribute."""

    def __init__(self, requests: Collection[str], attribute: str) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.value: Any = None
        self.n = 0

    def _applies(self, req: _Req) -> bool:
        if not self.requests:
            return True
        return (req.parent or req.name) in self.requests or (
            bool(req.parent) and req.full_name in self.requests)

    def add(self, req: _Req, rec: DeviceRec) -> bool:
        if not self._applies(req):
            return True
        attr = lookup_attribute(rec, self.attribute)
        if attr is None:
            return False
        kind, value = attr.kind(), attr.value()
        if kind not in ("int", "bool", "string", "version"):
            return False
        if self.n == 0:
            self.value, self.n = (kind, value), 1
            return True
        if self.value != (kind, value):
            return False
        self.n += 1
        return True

    def remove(self, req: _Req) -> None:
        if self._applies(req):
            self.n -= 1


def lookup_attribute(rec: DeviceRec, name: str) -> Any:
    """A fully qualified attribute of a device; the driver's own domain may be omitted in
    the device's attributes."""
    attrs = rec.device.attributes
    found = attrs.get(name)
    if found is not None:
        return found
    domain, slash, ident = name.partition("/")
    if slash and domain == rec.id[0]:
        return attrs.get(ident)
    return None


def tolerates(t: DeviceToleration, taint: Any) -> bool:
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    if t.operator in (None, "", "Equal"):
        return (t.value or "") == (taint.value or "")
    return t.operator == "Exists"


def taint_blocks(rec: DeviceRec, tolerations: Sequence[DeviceToleration]) -> bool:
    for taint in rec.device.taints or ():
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
                tolerates(t, taint) for t in tolerations):
            return True
    return False


def claim_ref(claim: ResourceClaim) -> str:
    """klog.KObj: namespace/name, or the name alone."""
    ns = claim.metadata.namespace
    return f"{ns}/{claim.name}" if ns else claim.name


# Verdicts by what an expression can read of a device (devicecel.relevant_key): devices that
# differ only in attributes the selector never names (uuid, index) share one evaluation.
_VERDICTS: dict[Any, bool | str] = {}


def selector_verdict(rec: DeviceRec, expression: str) -> bool:
    """A selector's verdict on a device, evaluated once per device record. Raises
    CELError (compile or runtime)."""
    hit = rec.verdicts.get(expression)
    if hit is None:
        compiled = compile_selector(expression)
        if compiled.error:
            raise CELError(compiled.error)
        d = rec.device
        key = relevant_key(compiled, rec.id[0], d.attributes, d.capacity,
                           bool(d.allow_multiple_allocations))
        hit = _VERDICTS.get(key) if key is not None else None
        if hit is None:
            try:
                hit = compiled.matches(rec.cel_input)
            except CELError as e:
                hit = str(e)
            if key is not None:
                if len(_VERDICTS) > 100_000:
                    _VERDICTS.clear()
                _VERDICTS[key] = hit
        rec.verdicts[expression] = hit
    if isinstance(hit, str):
        raise CELError(hit, runtime=True)
    return hit
