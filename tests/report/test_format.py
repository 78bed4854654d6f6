from phalanx.report.format import fmt_duration, hostlist, percentile


def test_durations_read_like_kubectl() -> None:
    assert fmt_duration(None) == "-"
    assert fmt_duration(0) == "0s"
    assert fmt_duration(0.25) == "250ms"
    assert fmt_duration(2.5) == "2.5s"
    assert fmt_duration(90) == "1m30s"
    assert fmt_duration(3600) == "1h"
    assert fmt_duration(3 * 86400 + 4 * 3600 + 59) == "3d4h"


def test_hostlist_compresses_numbered_names_and_keeps_padding() -> None:
    names = ["node-005", "node-003", "node-004", "node-010", "gpu-a"]
    assert hostlist(names) == "gpu-a,node-[003-005,010]"
    assert hostlist(["node-7"]) == "node-7"
    assert hostlist([]) == ""


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile(list(map(float, range(1, 101))), 95) == 95.0
