"""The PodClique controller's expectations store, ported from Grove's
internal/expect/expectations_test.go (one test per Grove test), plus what Phalanx adds: the
index of an expected create and its time-to-live.

Grove's tests run ExpectCreations/ExpectDeletions from goroutines to show the store's lock;
the store here is used from one event loop, so the same calls run in sequence."""

from __future__ import annotations

from phalanx.operator.expectations import ExpectationsStore

KEY = "test-ns/test-pclq"


def _store(adds: list[str] = (), deletes: list[str] = ()) -> ExpectationsStore:  # type: ignore[assignment]
    store = ExpectationsStore(lambda: 0.0)
    for uid in adds:
        store.expect_creation(KEY, uid, 0)
    for uid in deletes:
        store._get(KEY).to_delete.add(uid)
    return store


def test_expect_creations() -> None:
    store = ExpectationsStore(lambda: 0.0)
    for uid in ("1", "2"):
        store.expect_creation(KEY, uid, int(uid))
    assert set(store.creates(KEY)) == {"1", "2"}
    store = _store(adds=["1", "2"])
    for uid in ("1", "3", "4"):
        store.expect_creation(KEY, uid, int(uid))
    assert set(store.creates(KEY)) == {"1", "2", "3", "4"}


def test_observe_deletions() -> None:
    store = _store(deletes=["1", "3", "5"])
    store.observe_deletion(KEY, "8")
    assert store.deletes(KEY) == {"1", "3", "5"}
    store = _store(deletes=["1", "2", "3", "5"])
    for uid in ("2", "5"):
        store.observe_deletion(KEY, uid)
    assert store.deletes(KEY) == {"1", "3"}


def test_expect_deletions() -> None:
    store = ExpectationsStore(lambda: 0.0)
    for uid in ("1", "2"):
        store.expect_deletion(KEY, uid)
    assert store.deletes(KEY) == {"1", "2"}
    store = _store(deletes=["1", "2"])
    for uid in ("1", "3", "4"):
        store.expect_deletion(KEY, uid)
    assert store.deletes(KEY) == {"1", "2", "3", "4"}


def test_delete_expectations() -> None:
    store = ExpectationsStore(lambda: 0.0)
    store.forget(KEY)  # a no-op when none exist
    assert len(store) == 0
    store = _store(adds=["3"], deletes=["1", "2"])
    store.forget(KEY)
    assert store.creates(KEY) == {} and store.deletes(KEY) == set() and len(store) == 0


def test_sync_expectations() -> None:
    store = _store(adds=["1", "2"], deletes=["3", "6"])
    store.sync(KEY, ["1", "3", "4", "7"], [])
    assert set(store.creates(KEY)) == {"2"} and store.deletes(KEY) == {"3"}
    store = _store(adds=["1"])
    store.sync(KEY, ["2", "3"], ["4", "5"])  # terminating pods are re-added
    assert set(store.creates(KEY)) == {"1"} and store.deletes(KEY) == {"4", "5"}
    store.sync("does-not-exist", ["1", "2"], [])
    assert store.creates("does-not-exist") == {} and store.deletes("does-not-exist") == set()


def test_an_expected_create_holds_its_index_until_seen_or_expired() -> None:
    now = [0.0]
    store = ExpectationsStore(lambda: now[0], ttl=300)
    store.expect_creation(KEY, "a", 0)
    store.expect_creation(KEY, "b", 1)
    assert store.creates(KEY) == {"a": 0, "b": 1}
    store.sync(KEY, ["a"], [])  # the informer delivered it
    assert store.creates(KEY) == {"b": 1}
    now[0] = 299.9
    store.sync(KEY, ["a"], [])
    assert store.creates(KEY) == {"b": 1}
    now[0] = 300.0  # never seen (deleted before its ADDED event, and that event lost): retry
    store.sync(KEY, ["a"], [])
    assert store.creates(KEY) == {}


def test_a_pod_deleted_before_it_was_seen_is_no_longer_expected() -> None:
    """Grove #457: the delete event lowers a create expectation too."""
    store = _store(adds=["1"])
    store.observe_deletion(KEY, "1")
    assert store.creates(KEY) == {}
