"""Labels and annotations as kube-apiserver validates them (phalanx.cluster.metavalidation),
ported from kube 1.36's apimachinery tests: TestValidateLabels
(pkg/apis/meta/v1/validation/validation_test.go) and TestValidateAnnotations
(pkg/api/validation/objectmeta_test.go), each case as kube writes it. Then the embedded API
server's use of them on every object (rules.validate_meta), a contract test: the real
kube-apiserver refuses and accepts the same objects."""

from __future__ import annotations

import pytest

from phalanx.cluster.client import Invalid
from phalanx.cluster.metavalidation import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    annotations_errors,
    labels_errors,
)

from .kinds import widget

NAME_PART = "name part must consist of"
NAME = "a valid label key must consist of"
LABEL = "a valid label must be an empty string or consist of"
MAX_LENGTH = "must be no more than"
LIMIT = TOTAL_ANNOTATION_SIZE_LIMIT

VALID_KEYS = ["simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple",
              "now-with-dashes/simple", "now-with-dashes/now-with-dashes",
              "now.with.dots/simple", "now-with.dashes-and.dots/simple", "1-num.2-num/3-num",
              "1234/5678", "1.2.3.4/5678"]
BAD_KEYS = [("nospecialchars^=@", NAME_PART), ("cantendwithadash-", NAME_PART),
            ("only/one/slash", NAME), ("a" * 254, MAX_LENGTH)]


@pytest.mark.parametrize("labels", [*({k: "bar"} for k in VALID_KEYS),
                                    {"UpperCaseAreOK123": "bar"},
                                    {"goodvalue": "123_-.BaR"}])
def test_validate_labels_success_cases(labels: dict[str, str]) -> None:
    assert labels_errors(labels, "field") == []


@pytest.mark.parametrize(("labels", "expect"), [
    *(({key: "bar"}, why) for key, why in BAD_KEYS),
    ({"toolongvalue": "a" * 64}, MAX_LENGTH),
    ({"backslashesinvalue": "some\\bad\\value"}, LABEL),
    ({"nocommasallowed": "bad,value"}, LABEL),
    ({"strangecharsinvalue": "?#$notsogood"}, LABEL),
])
def test_validate_labels_error_cases(labels: dict[str, str], expect: str) -> None:
    [(path, message)] = labels_errors(labels, "field")
    assert path == "field" and expect in message, message


@pytest.mark.parametrize("annotations", [
    *({k: "bar"} for k in VALID_KEYS),
    {"UpperCase123": "bar"},
    {"a": "b" * (LIMIT - 1)},
    {"a": "b" * (LIMIT // 2 - 1), "c": "d" * (LIMIT // 2 - 1)},
])
def test_validate_annotations_success_cases(annotations: dict[str, str]) -> None:
    assert annotations_errors(annotations, "field") == []


@pytest.mark.parametrize(("annotations", "expect"), [
    *(({key: "bar"}, why) for key, why in BAD_KEYS),
    ({"a": "b" * LIMIT}, f"Too long: may not be more than {LIMIT} bytes"),
    ({"a": "b" * (LIMIT // 2), "c": "d" * (LIMIT // 2)}, "Too long"),
])
def test_validate_annotations_error_cases(annotations: dict[str, str], expect: str) -> None:
    [(path, message)] = annotations_errors(annotations, "field")
    assert path == "field" and expect in message, message


def test_an_invalid_annotation_key_is_refused_with_kube_words(client_factory) -> None:
    """ValidateObjectMeta checks annotation keys on every object, on create and on update;
    a key that differs only in letter case from a valid one is valid."""
    async def main() -> None:
        c = client_factory()
        bad = widget("bad")
        bad.metadata.annotations = {"bad key!": "v"}
        with pytest.raises(Invalid) as err:
            await c.create(bad)
        assert err.value.field == "metadata.annotations"
        assert 'metadata.annotations: Invalid value: "bad key!": name part must consist of' \
            in err.value.message, err.value.message
        ok = widget("ok")
        ok.metadata.annotations = {"Example.COM/Note": "v"}
        live = await c.create(ok)
        live.metadata.annotations = {"only/one/slash": "v"}
        with pytest.raises(Invalid) as err:
            await c.update(live)
        assert err.value.field == "metadata.annotations"
        assert NAME in err.value.message
    client_factory.run(main)


def test_an_invalid_label_is_refused_with_kube_words(client_factory) -> None:
    async def main() -> None:
        c = client_factory()
        w = widget("a")
        w.metadata.labels = {"k": "bad value!"}
        with pytest.raises(Invalid) as err:
            await c.create(w)
        assert err.value.field == "metadata.labels"
        assert 'metadata.labels: Invalid value: "bad value!": ' + LABEL in err.value.message
    client_factory.run(main)
