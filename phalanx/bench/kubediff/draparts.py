"""The DRA parts of a kubediff case: GPUs that nodes publish through ResourceSlices, and a
ResourceClaim on the pod to place (resource.k8s.io/v1, structured parameters).

Each placement of a case gets a driver of its own, with identical copies of the devices
(`DRIVERS`: phalanx's placement and at most two of kube-scheduler's, pinned and unpinned).
A claim one scheduler allocated therefore never takes devices from the next placement, and
nothing has to be deallocated in between: that is kube-controller-manager's job, which the
harness does not run. The claim spec names its driver as `DRIVER`; world.py writes the
placement's driver in (DeviceClass names are the driver names).

The claims use what both schedulers implement: ExactCount with counts, `All`, CEL selectors
on device attributes, a `matchAttribute` constraint across two requests, and prioritised
alternatives (`firstAvailable`).
"""

from __future__ import annotations

from typing import Any

from . import features as F

DRIVER = "__driver__"
CLAIM = "__claim__"  # the pod's resourceClaimName; world.py names the claim per pod
DRIVERS = 3
MODELS = ("a100", "h100")
MEMORY_GIB = (40, 80)
CLIQUES = ("c0", "c1")
SELECTORS = (
    f'device.attributes["{DRIVER}"].model == "h100"',
    f'device.attributes["{DRIVER}"].memGiB >= 80',
    f'device.attributes["{DRIVER}"].index < 2',
)


def driver_names(prefix: str) -> list[str]:
    """The drivers of a case, one per placement (DNS subdomains, as a driver name must be)."""
    return [f"d{i}.{prefix}.kubediff.phalanx.io" for i in range(DRIVERS)]


class DraParts:
    rng: Any
    on: set[str]
    case: Any

    def use(self, feature: str) -> None:
        raise NotImplementedError

    def chance(self, p: float) -> bool:
        raise NotImplementedError

    def pick(self, seq: tuple[Any, ...] | list[Any]) -> Any:
        raise NotImplementedError

    def node_devices(self, node: str) -> None:
        """Some nodes publish 1-4 GPUs with a model, memory, index and NVLink clique."""
        if F.DRA not in self.on or not self.chance(0.6):
            return
        devices = []
        for i in range(self.rng.randint(1, 4)):
            devices.append({"name": f"gpu-{i}", "attributes": {
                "index": {"int": i},
                "model": {"string": self.pick(MODELS)},
                "memGiB": {"int": self.pick(MEMORY_GIB)},
                "clique": {"string": self.pick(CLIQUES)},
            }})
        self.case.devices[node] = devices

    def _exactly(self, count: int | None, mode: str = "ExactCount") -> dict[str, Any]:
        exactly: dict[str, Any] = {"deviceClassName": DRIVER, "allocationMode": mode}
        if count is not None:
            exactly["count"] = count
        if self.chance(0.4):
            exactly["selectors"] = [{"cel": {"expression": self.pick(SELECTORS)}}]
        return exactly

    def claim(self, spec: dict[str, Any]) -> None:
        """Half of the pods (with DRA on) claim GPUs; the claim's shape varies."""
        if F.DRA not in self.on or not self.chance(0.5):
            return
        roll = self.rng.random()
        devices: dict[str, Any]
        if roll < 0.45:
            devices = {"requests": [{"name": "gpus",
                                     "exactly": self._exactly(self.rng.randint(1, 4))}]}
        elif roll < 0.6:
            devices = {"requests": [{"name": "gpus", "exactly": self._exactly(None, "All")}]}
        elif roll < 0.8:
            devices = {"requests": [{"name": "a", "exactly": self._exactly(1)},
                                    {"name": "b", "exactly": self._exactly(1)}],
                       "constraints": [{"matchAttribute": f"{DRIVER}/clique"}]}
        else:
            first = [{"name": "big", "deviceClassName": DRIVER, "count": self.rng.randint(2, 4)},
                     {"name": "small", "deviceClassName": DRIVER, "count": 1}]
            if self.chance(0.5):
                first[0]["selectors"] = [{"cel": {"expression": self.pick(SELECTORS)}}]
            devices = {"requests": [{"name": "gpus", "firstAvailable": first}]}
        self.case.claim = {"devices": devices}
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": CLAIM}]
        self.use(F.DRA)
