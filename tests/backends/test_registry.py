"""Registry and configuration rules (GREP-375: default-scheduler always on, others listed)."""

from __future__ import annotations

import pytest

from phalanx.backends import BackendConfigError, BackendRegistry, UnknownBackend


def test_default_scheduler_always_enabled() -> None:
    reg = BackendRegistry.from_profiles([], "default-scheduler")
    assert reg.names() == ["default-scheduler"]
    assert reg.default().name == "default-scheduler"
    assert reg.get_or_default(None) is reg.default()
    assert reg.get_or_default("") is reg.default()


def test_unknown_backend_names_the_field() -> None:
    with pytest.raises(BackendConfigError) as err:
        BackendRegistry.from_profiles([("no-such", None)], "default-scheduler")
    assert err.value.field == "scheduler.profiles[0].name"
    assert "no-such" in str(err.value)


def test_duplicate_profile_rejected() -> None:
    with pytest.raises(BackendConfigError) as err:
        BackendRegistry.from_profiles(
            [("default-scheduler", None), ("default-scheduler", None)], "default-scheduler"
        )
    assert err.value.field == "scheduler.profiles[1].name"


def test_bad_backend_config_names_the_key() -> None:
    with pytest.raises(BackendConfigError) as err:
        BackendRegistry.from_profiles(
            [("default-scheduler", {"gangScheduling": True, "bogus": 1})], "default-scheduler"
        )
    assert err.value.field == "scheduler.profiles[0].config.bogus"
    assert "Extra inputs are not permitted" in str(err.value)


def test_default_must_be_enabled() -> None:
    with pytest.raises(BackendConfigError) as err:
        BackendRegistry.from_profiles([], "kai-scheduler")
    assert err.value.field == "scheduler.defaultProfileName"


def test_unlisted_scheduler_is_unknown() -> None:
    reg = BackendRegistry.from_profiles([], "default-scheduler")
    with pytest.raises(UnknownBackend):
        reg.get("volcano")
