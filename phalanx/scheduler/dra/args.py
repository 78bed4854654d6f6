"""DynamicResourcesArgs: kube-scheduler 1.36's args of the DynamicResources plugin.

- `filterTimeout` (default 10s, at least 0; 0 turns the timeout off): how long Filter may
  search one node for devices. A node whose search runs out of time is unschedulable for the
  pod (dynamicresources.py), as kube's DRASchedulerFilterTimeout (beta, on) documents.
- `bindingTimeout` (default 10m): how long PreBind waits for device binding conditions. Phalanx
  does not implement binding conditions (devices that have them are never allocated), so the
  timeout could never apply: any other value is refused rather than ignored.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from phalanx.api.base import KubeModel
from phalanx.api.duration import DURATION_PATTERN, parse_duration
from phalanx.scheduler.framework.pluginargs import raise_errors

FILTER_TIMEOUT_DEFAULT = "10s"  # DynamicResourcesFilterTimeoutDefault
BINDING_TIMEOUT_DEFAULT = "10m"  # DynamicResourcesBindingTimeoutDefault
_BINDING_TIMEOUT_DEFAULT_SECONDS = 600.0


class DynamicResourcesArgs(KubeModel):
    filter_timeout: str = Field(default=FILTER_TIMEOUT_DEFAULT, pattern=DURATION_PATTERN)
    binding_timeout: str = Field(default=BINDING_TIMEOUT_DEFAULT, pattern=DURATION_PATTERN)

    @property
    def filter_timeout_seconds(self) -> float:
        return parse_duration(self.filter_timeout)

    @model_validator(mode="after")
    def _valid(self) -> DynamicResourcesArgs:
        """kube's ValidateDynamicResourcesArgs (both gates on), then Phalanx's limit."""
        errors: list[str] = []
        if parse_duration(self.filter_timeout) < 0:
            errors.append(f'filterTimeout: Invalid value: "{self.filter_timeout}": '
                          "must be zero or positive")
        binding = parse_duration(self.binding_timeout)
        if binding < 1:
            errors.append(f'bindingTimeout: Invalid value: "{self.binding_timeout}": '
                          "must be at least 1 second")
        elif binding != _BINDING_TIMEOUT_DEFAULT_SECONDS:
            errors.append(f'bindingTimeout: Invalid value: "{self.binding_timeout}": Phalanx '
                          "does not support device binding conditions (devices with "
                          "bindingConditions are never allocated), so a binding timeout "
                          f"would never apply; remove it (the default is {BINDING_TIMEOUT_DEFAULT})")
        raise_errors(errors)
        return self
