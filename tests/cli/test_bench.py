"""`phalanx bench` flags checked before any work starts."""

import importlib.util

import pytest

from phalanx.cli.bench import require_profiler
from phalanx.cli.errors import UserError


def test_profile_without_pyinstrument_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyinstrument" else real(name, *a))
    with pytest.raises(UserError, match=r"--profile: pyinstrument is not installed.*\.\[bench\]"):
        require_profiler(True)
    require_profiler(False)  # no profile asked: nothing needed
