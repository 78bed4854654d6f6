"""Pod indices of a PodClique, ported from Grove's internal/index/tracker_test.go (one test per
Grove test; GetAvailableIndices is available_indices, extractUsedIndices used_indices,
findAvailableIndices free_indices, extractIndexFromHostname naming.hostname_index).

Not ported: TestExtractIndexFromHostname_DirectNegativeValidation checks `index >= 0` on
literal integers and calls no Grove code; here no hostname can give a negative index (the
part after the last dash must be all digits), which the invalid-hostname tests cover."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Pod, PodSpec, PodStatus
from phalanx.operator.naming import hostname_index
from phalanx.operator.podindex import (
    PodIndexError,
    available_indices,
    free_indices,
    used_indices,
)


def pod(name: str, hostname: str, *, phase: str = "Running",
        terminating: bool = False) -> Pod:
    return Pod(metadata=ObjectMeta(name=name, deletion_timestamp=datetime.now(UTC)
                                   if terminating else None),
               spec=PodSpec(hostname=hostname or None, containers=[Container(name="c")]),
               status=PodStatus(phase=phase))


def test_get_next_available_indices_empty_pods() -> None:
    assert available_indices([], 3) == [0, 1, 2]


def test_get_next_available_indices_with_existing_pods() -> None:
    pods = [pod("pod-a", "test-clique-0"), pod("pod-b", "test-clique-2"),
            pod("pod-c", "test-clique-4")]
    assert available_indices(pods, 3) == [1, 3, 5]  # holes first


def test_get_next_available_indices_sequential() -> None:
    pods = [pod("pod-a", "test-clique-0"), pod("pod-b", "test-clique-1"),
            pod("pod-c", "test-clique-2")]
    assert available_indices(pods, 2) == [3, 4]


def test_get_next_available_indices_invalid_hostnames() -> None:
    pods = [pod("pod-valid", "test-clique-0"), pod("pod-invalid1", "invalid-hostname"),
            pod("pod-invalid2", "pod-abc"), pod("pod-valid2", "test-clique-2")]
    with pytest.raises(PodIndexError, match="pod-invalid1"):
        available_indices(pods, 3)


def test_extract_used_indices_valid_pods() -> None:
    pods = [pod("pod-a", "test-clique-0"), pod("pod-b", "test-clique-2"),
            pod("pod-c", "test-clique-4")]
    assert used_indices(pods) == {0, 2, 4}


def test_extract_used_indices_duplicate_indices() -> None:
    pods = [pod("pod-first", "test-clique-1"), pod("pod-second", "test-clique-1"),
            pod("pod-third", "test-clique-2")]
    with pytest.raises(PodIndexError, match="duplicate index 1"):
        used_indices(pods)


def test_extract_used_indices_invalid_indices() -> None:
    pods = [pod("pod-valid", "test-clique-1"), pod("pod-empty", ""),
            pod("pod-invalid", "invalid-hostname"), pod("pod-non-numeric", "test-clique-abc")]
    with pytest.raises(PodIndexError, match="pod-empty"):
        used_indices(pods)


def test_extract_used_indices_only_active_pods() -> None:
    pods = [pod("active-pod", "test-clique-0"),
            pod("terminating-pod", "test-clique-1", terminating=True),
            pod("failed-pod", "test-clique-2", phase="Failed")]
    assert used_indices(pods) == {0}


def test_find_available_indices_empty_used() -> None:
    assert free_indices(set(), 3) == [0, 1, 2]


def test_find_available_indices_with_holes() -> None:
    assert free_indices({0, 2, 4}, 3) == [1, 3, 5]


def test_find_available_indices_sequential() -> None:
    assert free_indices({0, 1, 2}, 2) == [3, 4]


def test_find_available_indices_zero_count() -> None:
    assert free_indices({0, 1, 2}, 0) == []


@pytest.mark.parametrize(("hostname", "index"), [
    ("pod-0", 0), ("test-clique-5", 5), ("complex-name-with-dashes-42", 42), ("single-1", 1),
    ("prefix-123", 123)])
def test_extract_index_from_hostname_valid(hostname: str, index: int) -> None:
    assert hostname_index(hostname) == index


@pytest.mark.parametrize("hostname", ["", "no-dash", "pod", "pod-abc", "prefix-", "prefix-12a"])
def test_extract_index_from_hostname_invalid(hostname: str) -> None:
    assert hostname_index(hostname) is None


@pytest.mark.parametrize(("hostname", "index"), [
    ("clique--1", 1), ("pod--5", 5), ("test-name--10", 10)])
def test_extract_index_from_hostname_double_dash_cases(hostname: str, index: int) -> None:
    """Grove splits on "-": `pod--5` ends in "5", a valid index (not -5)."""
    assert hostname_index(hostname) == index


@pytest.mark.parametrize("hostname", ["invalid-negative-format", "bad-suffix-"])
def test_extract_index_from_hostname_negative_validation(hostname: str) -> None:
    assert hostname_index(hostname) is None


def test_in_flight_creates_hold_their_indices() -> None:
    """Beyond Grove: indices of creates the cache does not show yet are not handed out."""
    assert available_indices([pod("a", "c-0")], 2, held=[1]) == [2, 3]
