"""metadata.annotations: at most 256 KiB in total (keys and values, in bytes), as the API
server's ValidateAnnotationsSize (apimachinery/pkg/api/validation/objectmeta.go), on create
and on update; a contract test, so the real API server checks the same numbers."""

import pytest

from phalanx.cluster.client import Invalid

from .kinds import Widget, widget

LIMIT = 256 * 1024


def _with_annotations(name: str, total: int) -> Widget:
    w = widget(name)
    key = "example.com/blob"
    w.metadata.annotations = {key: "x" * (total - len(key))}
    return w


def test_annotations_up_to_the_limit_are_accepted_beyond_refused(client_factory) -> None:
    async def main() -> None:
        c = client_factory()
        await c.create(_with_annotations("at-limit", LIMIT))
        with pytest.raises(Invalid) as err:
            await c.create(_with_annotations("over", LIMIT + 1))
        assert err.value.field == "metadata.annotations"
        assert f"Too long: may not be more than {LIMIT} bytes" in err.value.message
    client_factory.run(main)


def test_an_update_that_grows_annotations_past_the_limit_is_refused(client_factory) -> None:
    async def main() -> None:
        c = client_factory()
        small = await c.create(_with_annotations("grows", 100))
        big = _with_annotations("grows", LIMIT + 1)
        big.metadata.resource_version = small.metadata.resource_version
        with pytest.raises(Invalid) as err:
            await c.update(big)
        assert err.value.field == "metadata.annotations"
    client_factory.run(main)


def test_multibyte_values_count_in_bytes(client_factory) -> None:
    async def main() -> None:
        c = client_factory()
        w = widget("utf8")
        w.metadata.annotations = {"a": "\u00e9" * (LIMIT // 2)}  # 2 bytes each: 1 over
        with pytest.raises(Invalid):
            await c.create(w)
    client_factory.run(main)
