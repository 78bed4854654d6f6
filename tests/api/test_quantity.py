import pytest

from phalanx.api.quantity import format_quantity, format_resources, parse_quantity, parse_resources


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", 0.5),
        ("2", 2.0),
        ("1.5", 1.5),
        (".5", 0.5),
        ("16Gi", 16 * 2**30),
        ("1Ki", 1024.0),
        ("1G", 1e9),
        ("1k", 1e3),
        ("1e3", 1e3),
        ("1E3", 1e3),
        ("1E", 1e18),  # a suffix, not an exponent
        ("2.5e-3", 0.0025),
        ("100u", 1e-4),
        ("5n", 5e-9),
        ("+3", 3.0),
        ("-1", -1.0),
        (" 1Mi ", 2.0**20),
        (8, 8.0),
        (0.25, 0.25),
    ],
)
def test_parse(text, expected):
    assert parse_quantity(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "5 Gi", "Gi", "1gi", "1KiB", "e3", "--1"])
def test_bad_strings_name_the_value_and_forms(bad):
    with pytest.raises(ValueError) as info:
        parse_quantity(bad)
    assert repr(bad) in str(info.value)
    assert "500m" in str(info.value)


@pytest.mark.parametrize("bad", [True, None, [1], {"a": 1}, float("inf"), float("nan")])
def test_bad_types(bad):
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(bad)


def test_parse_resources():
    assert parse_resources({"cpu": "250m", "memory": "1Gi", "nvidia.com/gpu": 8}) == {
        "cpu": 0.25,
        "memory": 2.0**30,
        "nvidia.com/gpu": 8.0,
    }
    assert parse_resources(None) == {}


@pytest.mark.parametrize(
    ("value", "resource", "text"),
    [
        (0.5, "cpu", "500m"),
        (2.0, "cpu", "2"),
        (1.25, "cpu", "1250m"),
        (0.0001, "cpu", "0.0001"),
        (16 * 2**30, "memory", "16Gi"),
        (1536 * 2**20, "memory", "1536Mi"),
        (1e9, "memory", "1G"),
        (1000, "memory", "1k"),
        (123, "memory", "123"),
        (8.0, "nvidia.com/gpu", "8"),
        (0, "cpu", "0"),
        (2**21, "hugepages-2Mi", "2Mi"),
    ],
)
def test_format(value, resource, text):
    assert format_quantity(value, resource) == text


@pytest.mark.parametrize("text", ["500m", "16Gi", "3", "1536Mi", "250m"])
def test_format_inverts_parse(text):
    resource = "cpu" if text.endswith("m") or text.isdigit() else "memory"
    assert parse_quantity(format_quantity(parse_quantity(text), resource)) == parse_quantity(text)


def test_format_resources():
    assert format_resources({"cpu": 2.0, "memory": 2.0**34}) == "cpu=2,memory=16Gi"
