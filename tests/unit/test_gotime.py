"""Go's Duration.String, as kubelet and helm-controller messages print durations."""

from __future__ import annotations

import pytest

from helmsim.kube.gotime import go_duration, go_duration_ns

NS, US, MS, S, MIN, H = 1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000

# golang/go src/time/time_test.go durationTests (go1.22), as data
GO_DURATION_TESTS = [
    ("0s", 0),
    ("1ns", 1 * NS),
    ("1.1µs", 1100 * NS),
    ("2.2ms", 2200 * US),
    ("3.3s", 3300 * MS),
    ("4m5s", 4 * MIN + 5 * S),
    ("4m5.001s", 4 * MIN + 5001 * MS),
    ("5h6m7.001s", 5 * H + 6 * MIN + 7001 * MS),
    ("8m0.000000001s", 8 * MIN + 1 * NS),
    ("2562047h47m16.854775807s", (1 << 63) - 1),
    ("-2562047h47m16.854775808s", -(1 << 63)),
]


@pytest.mark.parametrize(("text", "ns"), GO_DURATION_TESTS)
def test_duration_string_as_go(text: str, ns: int) -> None:
    assert go_duration_ns(ns) == text
    if ns > 0:  # TestDurationString: the negation prints with a minus sign
        assert go_duration_ns(-ns) == "-" + text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(2.5, "2.5s"), (0.5, "500ms"), (0.75, "750ms"), (90, "1m30s"), (300, "5m0s"), (3600, "1h0m0s"), (3725.25, "1h2m5.25s")],
)
def test_seconds_print_as_their_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_truncate_rounds_toward_zero_first() -> None:
    # pkg/kubelet/images/image_manager.go: pull times are Truncate(time.Millisecond)
    assert go_duration(0.0004, truncate=0.001) == "0s"
    assert go_duration(1.2345678, truncate=0.001) == "1.234s"
    assert go_duration(1.2345678) == "1.2345678s"
