import pytest

from phalanx.api.duration import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("4h", 14400),
        ("30s", 30),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("2h45m30.5s", 9930.5),
        ("300ms", 0.3),
        ("10us", 1e-5),
        ("10µs", 1e-5),
        ("5ns", 5e-9),
        ("0", 0),
        ("-1m", -60),
    ],
)
def test_parse(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "4", "4 hours", "h", "1d", "1h-30m", ".h", "-"])
def test_bad(bad):
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(14400, "4h0m0s"), (90, "1m30s"), (0.25, "250ms"), (0, "0s"), (1.5, "1.5s"), (-60, "-1m0s")],
)
def test_format_like_go(seconds, text):
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)
