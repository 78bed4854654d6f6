"""The KAI table modules keep their docstrings honest: every row the harness cannot express is
named there with its reason, and no module runs a table other than the one it is named after."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

from . import __name__ as package
from . import __path__ as package_path
from .kai_cases import unsupported_ids


def _table_modules() -> list[ModuleType]:
    return [importlib.import_module(f"{package}.{m.name}")
            for m in pkgutil.iter_modules(package_path)
            if m.name.startswith("test_kai_") and m.name != "test_kai_tables"]


@pytest.mark.parametrize("module", _table_modules(), ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_docstring_lists_unexpressed_rows(module: ModuleType) -> None:
    doc = " ".join((module.__doc__ or "").split())
    missing = [f"{rid}: {why}" for rid, why in unsupported_ids(module.TABLE).items()
               if f'"{rid}": {why}' not in doc]
    assert not missing, f"{module.__name__} docstring does not list: {missing}"
