"""Gang sources: adapters from each backend's scheduler objects to the one Gang model."""

from __future__ import annotations

from .base import GangSource

__all__ = ["GangSource"]
