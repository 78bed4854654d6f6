"""Go duration strings ("4h", "30s", "1h30m", "1.5h", "300ms"), as metav1.Duration uses."""

from __future__ import annotations

import re
from functools import lru_cache

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,  # micro sign
    "\u03bcs": 1e-6,  # Greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_TERM = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
DURATION_PATTERN = r"^[+-]?(?:0|(?:[0-9]*(?:\.[0-9]*)?(?:ns|us|µs|μs|ms|s|m|h))+)$"


@lru_cache(maxsize=1024)
def parse_duration(text: str) -> float:
    """Seconds in a Go duration string: "4h" -> 14400.0, "1m30s" -> 90.0, "0" -> 0.0.

    Raises ValueError naming the bad value and the accepted units.
    """
    s = text.strip()
    sign = 1.0
    if s.startswith(("+", "-")):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _TERM.match(s, pos)
        if m is None or m.group(1) in ("", "."):
            raise ValueError(
                f"invalid duration {text!r}: expected a Go duration such as 30s, 5m, 4h or "
                "1h30m (units: ns, us, ms, s, m, h)"
            )
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not s:
        raise ValueError(f"invalid duration {text!r}: empty")
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's time.Duration.String(): 14400 -> "4h0m0s", 90 -> "1m30s", 0.25 -> "250ms"."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 1:
        for unit, scale in (("ms", 1e-3), ("\u00b5s", 1e-6), ("ns", 1e-9)):
            if seconds >= scale:
                return f"{sign}{_trim(seconds / scale)}{unit}"
        return f"{sign}{_trim(seconds / 1e-9)}ns"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = ""
    if hours:
        out += f"{int(hours)}h"
    if hours or minutes:
        out += f"{int(minutes)}m"
    return f"{sign}{out}{_trim(secs)}s"


def _trim(value: float) -> str:
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return text or "0"
