"""Latencies: fixed values, Go durations, distributions, nominal values and seeded sampling."""

from __future__ import annotations

import random
import statistics

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from helmsim.cluster.latency import (
    Constant,
    Empirical,
    Latency,
    LogNormal,
    Uniform,
    parse_duration,
)


class _Holder(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    latency: Latency


def _lat(value: object) -> Constant | Uniform | LogNormal | Empirical:
    return _Holder.model_validate({"latency": value}).latency


def _error(value: object) -> str:
    with pytest.raises(ValidationError) as info:
        _lat(value)
    return info.value.errors()[0]["msg"]


# Valid, non-negative rows of golang/go src/time/time_test.go parseDurationTests (@f7396aae).
@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("5s", 5.0),
        ("30s", 30.0),
        ("1478s", 1478.0),
        ("+5s", 5.0),
        ("-0", 0.0),
        ("+0", 0.0),
        ("5.0s", 5.0),
        ("5.6s", 5.6),
        ("5.s", 5.0),
        (".5s", 0.5),
        ("1.004s", 1.004),
        ("100.00100s", 100.001),
        ("10ns", 10e-9),
        ("11us", 11e-6),
        ("12µs", 12e-6),
        ("12μs", 12e-6),
        ("13ms", 0.013),
        ("15m", 900.0),
        ("16h", 57600.0),
        ("3h30m", 12600.0),
        ("10.5s4m", 250.5),
        ("1h2m3s4ms5us6ns", 3723.004005006),
        ("39h9m14.425s", 140954.425),
    ],
)
def test_go_duration_strings(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12, abs=1e-15)


# Invalid rows of the same Go table (plus a negative one, which Go accepts but a latency cannot be).
@pytest.mark.parametrize(
    "text", ["", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "\x85\x85", "-5s"]
)
def test_bad_duration_strings_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_missing_unit_says_how_to_fix_it() -> None:
    assert "missing unit" in _error("5") and "5s" in _error("5")


@pytest.mark.parametrize(
    ("value", "seconds"), [(2, 2.0), (0.25, 0.25), ("1m30s", 90.0), ("500ms", 0.5), (0, 0.0)]
)
def test_fixed_values_are_constants(value: object, seconds: float) -> None:
    lat = _lat(value)
    assert isinstance(lat, Constant)
    assert lat.nominal() == seconds
    assert lat.sample(random.Random(1)) == seconds


def test_constant_mapping_form() -> None:
    assert _lat({"dist": "constant", "value": "2s"}).nominal() == 2.0


@pytest.mark.parametrize(
    ("spec", "nominal"),
    [
        ({"dist": "uniform", "min": 0.1, "max": 2}, 1.05),
        ({"dist": "uniform", "min": "100ms", "max": "2s"}, 1.05),
        ({"dist": "lognormal", "median": 3, "sigma": 0.5}, 3.0),
        ({"dist": "empirical", "samples": [4, 1, 3]}, 3.0),
        ({"dist": "empirical", "samples": [1, 2, 3, 10]}, 2.5),
        ({"dist": "uniform", "min": 0.1, "max": 2, "nominal": 0.5}, 0.5),
        ({"dist": "lognormal", "median": 3, "sigma": 0.5, "nominal": "10s"}, 10.0),
    ],
)
def test_nominal_is_the_central_value_or_the_override(spec: dict, nominal: float) -> None:
    assert _lat(spec).nominal() == pytest.approx(nominal)


@pytest.mark.parametrize(
    "spec",
    [
        {"dist": "uniform", "min": 0.1, "max": 2},
        {"dist": "lognormal", "median": 3, "sigma": 0.8},
        {"dist": "empirical", "samples": [0.5, 1.5, 9]},
    ],
)
def test_sampling_is_reproducible_with_a_seed(spec: dict) -> None:
    lat = _lat(spec)

    def draws(seed: int) -> list[float]:
        rng = random.Random(seed)
        return [lat.sample(rng) for _ in range(50)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    assert len(set(draws(7))) > 1  # a distribution, not a constant


def test_uniform_samples_stay_in_range() -> None:
    lat = _lat({"dist": "uniform", "min": 0.1, "max": 2})
    rng = random.Random(3)
    draws = [lat.sample(rng) for _ in range(2000)]
    assert min(draws) >= 0.1 and max(draws) <= 2.0
    assert statistics.mean(draws) == pytest.approx(1.05, abs=0.05)


def test_lognormal_median_is_the_sample_median() -> None:
    lat = _lat({"dist": "lognormal", "median": 3, "sigma": 0.5})
    rng = random.Random(11)
    draws = [lat.sample(rng) for _ in range(4000)]
    assert statistics.median(draws) == pytest.approx(3.0, rel=0.05)
    assert min(draws) > 0


def test_empirical_draws_only_its_samples() -> None:
    lat = _lat({"dist": "empirical", "samples": [1, 2, "3s"]})
    rng = random.Random(5)
    assert {lat.sample(rng) for _ in range(200)} == {1.0, 2.0, 3.0}


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (-1, "negative"),
        ("-2s", "negative"),
        (True, "expected a number of seconds"),
        ({"dist": "uniform", "min": 3, "max": 2}, "min (3) is greater than max (2)"),
        ({"dist": "uniform", "min": -1, "max": 2}, "negative"),
        ({"dist": "empirical", "samples": []}, "samples must not be empty"),
        ({"dist": "empirical", "samples": [1, -1]}, "negative"),
        ({"dist": "lognormal", "median": 0, "sigma": 1}, "median must be > 0"),
        ({"dist": "lognormal", "median": 1, "sigma": -1}, "greater than or equal to 0"),
        ({"dist": "uniform", "min": 1, "max": 2, "nominal": 3}, "outside the distribution's range"),
        ({"dist": "gamma", "k": 1}, "does not match any of the expected tags"),
        ({"min": 1, "max": 2}, "needs 'dist'"),
        ({"dist": "uniform", "min": 1}, "Field required"),
        ({"dist": "uniform", "min": 1, "max": 2, "mode": 1}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_latencies_have_clear_errors(value: object, needle: str) -> None:
    assert needle in _error(value)


def test_serialization_round_trips() -> None:
    for spec in (2, {"dist": "uniform", "min": 0.1, "max": 2, "nominal": 1}):
        dumped = _Holder(latency=_lat(spec)).model_dump(by_alias=True)["latency"]
        assert _lat(dumped) == _lat(spec)
    assert _Holder(latency=_lat("2s")).model_dump()["latency"] == 2.0
    uniform = _Holder(latency=_lat({"dist": "uniform", "min": 0, "max": 1}))
    assert list(uniform.model_dump()["latency"]) == ["dist", "min", "max"]
