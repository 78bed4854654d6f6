"""The device CEL environment, with kube's rows (dynamic-resource-allocation/cel,
compile_test.go, TestCompile); ids are kube's row names. Runtime error texts are CEL's own
(cel-cpp's words differ from cel-go's), so a row checks the key named in the error.

Not ported: list-type attributes and `includes()` (`list-of-*`, `macro-on-list-*`,
`includes-function-*`, `in-operator-on-list`: the alpha DRAListTypeAttributes gate),
`macro-exists-on-*` and `attribute-access-causes-match-error` (same gate), and the cost
rows (`many`, `expensive`, and every row's expectCost: selector cost limits are not enforced).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from phalanx.api.devicecel import CELError, compile_selector, device_input, exact_quantity
from phalanx.api.resource import DeviceAttribute, DeviceCapacity

D = "dra.example.com"


@dataclass
class Row:
    expression: str
    driver: str = ""
    attributes: dict[str, dict[str, Any]] = field(default_factory=dict)
    capacity: dict[str, str] = field(default_factory=dict)
    match: bool = False
    compile_error: str = ""
    match_error: str = ""


ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""

ROWS: dict[str, Row] = {
    "true": Row("true", match=True),
    "false": Row("false"),
    "syntax-error": Row("?!", compile_error="Syntax error"),
    "type-error": Row("1", compile_error="must evaluate to bool or the unknown type, not int"),
    "runtime-error-lookup-identifier": Row(
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        match_error="noSuchAttr"),
    "runtime-error-lookup-map": Row(
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        match_error="noSuchAttr"),
    "domain-check-negative": Row('"no-such-domain" in device.attributes'),
    "domain-check-positive": Row('"dra.example.com" in device.attributes',
                                 attributes={f"{D}/something": {"bool": True}}, match=True),
    "empty-driver-name": Row('device.driver == ""', match=True),
    "real-driver-name": Row('device.driver == "dra.example.com"', driver=D, match=True),
    "driver-name-qualifier": Row('device.attributes["dra.example.com"].name', driver=D,
                                 attributes={"name": {"bool": True}}, match=True),
    "driver-name-qualifier-map-lookup": Row('device.attributes["dra.example.com"]["name"]',
                                            driver=D, attributes={"name": {"bool": True}},
                                            match=True),
    "bind": Row('cel.bind(dra, device.attributes["dra.example.com"], dra.name)', driver=D,
                attributes={"name": {"bool": True}}, match=True),
    "qualified-attribute-name": Row('device.attributes["other.example.com"].name', driver=D,
                                    attributes={"other.example.com/name": {"bool": True}},
                                    match=True),
    "bool": Row('device.attributes["dra.example.com"].name', driver=D,
                attributes={"name": {"bool": True}}, match=True),
    "int": Row('device.attributes["dra.example.com"].name > 0', driver=D,
               attributes={"name": {"int": 1}}, match=True),
    "string": Row('device.attributes["dra.example.com"].name == "fish"', driver=D,
                  attributes={"name": {"string": "fish"}}, match=True),
    "version": Row('device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
                   driver=D, attributes={"name": {"version": "1.0.0"}}, match=True),
    "version_v": Row('device.attributes["dra.example.com"].name.isGreaterThan('
                     'semver("v0.0.1", true)) && isSemver("v1.0.0", true)', driver=D,
                     attributes={"name": {"version": "1.0.0"}}, match=True),
    "quantity": Row('device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
                    driver=D, capacity={"name": "1Mi"}, match=True),
    "check-positive": Row('"name" in device.capacity["dra.example.com"] && '
                          'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
                          driver=D, capacity={"name": "1Mi"}, match=True),
    "check-negative": Row('!("name" in device.capacity["dra.example.com"]) || '
                          'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
                          match=True),
    "all": Row(ALL, driver=D, attributes={"bool": {"bool": True}, "int": {"int": 1},
                                          "string": {"string": "fish"},
                                          "version": {"version": "1.0.0"}},
               capacity={"quantity": "1Mi"}, match=True),
}


@pytest.mark.parametrize("name", list(ROWS), ids=list(ROWS))
def test_compile(name: str) -> None:
    row = ROWS[name]
    compiled = compile_selector(row.expression)
    if row.compile_error:
        assert row.compile_error in compiled.error
        return
    assert not compiled.error, compiled.error
    device = device_input(row.driver, {k: DeviceAttribute.model_validate(v)
                                       for k, v in row.attributes.items()},
                          {k: DeviceCapacity(value=v) for k, v in row.capacity.items()})
    if row.match_error:
        with pytest.raises(CELError) as err:
            compiled.matches(device)
        assert err.value.runtime and row.match_error in str(err.value)
        return
    assert compiled.matches(device) is row.match


def test_quantities_are_exact_and_equal_by_value() -> None:
    assert exact_quantity("1.5Gi") == 1610612736
    assert exact_quantity("100m") * 10 == 1
    c = compile_selector('quantity("1Gi") == quantity("1024Mi") && '
                         'quantity("1").compareTo(quantity("999m")) == 1 && '
                         'quantity("2").add(1).asInteger() == 3 && '
                         'quantity("1.5").isInteger() == false')
    assert c.matches(device_input("d", {}, {}))


def test_versions_compare_by_precedence() -> None:
    c = compile_selector('semver("1.0.0-alpha").isLessThan(semver("1.0.0")) && '
                         'semver("1.2.3").major() == 1 && semver("1.2.3").patch() == 3 && '
                         'semver("1.10.0").isGreaterThan(semver("1.9.0"))')
    assert c.matches(device_input("d", {}, {}))


def test_each_expression_is_compiled_once() -> None:
    assert compile_selector("device.driver == 'x'") is compile_selector("device.driver == 'x'")
