"""The budgets of helmsim.limits: values people write, messages naming the flag, env overrides."""

from __future__ import annotations

import os

import pytest

from helmsim import limits
from helmsim.errors import InputError


def _field(name: str):  # type: ignore[no-untyped-def]
    return next(f for f in limits.FIELDS if f.name == name)


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("max_pods", "20000", 20_000),
        ("max_pods", "1,000,000", 1_000_000),
        ("max_pods", "0", 0),
        ("max_file_size", "64Mi", 64 * 1024**2),
        ("max_file_size", "2GiB", 2 * 1024**3),
        ("max_file_size", "500M", 500_000_000),
        ("max_file_size", "4096", 4096),
        ("render_timeout", "90s", 90.0),
        ("render_timeout", "2m", 120.0),
        ("render_timeout", "15", 15.0),
    ],
)
def test_values_are_read_as_people_write_them(name: str, text: str, value: float) -> None:
    assert limits.parse_value(_field(name), text) == value


@pytest.mark.parametrize(("name", "text"), [("max_pods", "many"), ("max_pods", "-1"), ("max_file_size", "1Q"), ("render_timeout", "soon")])
def test_bad_values_name_the_flag(name: str, text: str) -> None:
    with pytest.raises(InputError) as err:
        limits.parse_value(_field(name), text)
    assert str(err.value).startswith(_field(name).metadata["flag"])


def test_the_message_names_amount_flag_and_limit() -> None:
    with pytest.raises(limits.LimitExceeded) as err:
        limits.check("max_pods", 1_000_000, "replicas", subject="Deployment/default/web", file="d.yaml", line=3)
    assert str(err.value) == "d.yaml:3: Deployment/default/web: 1,000,000 replicas exceeds --max-pods 20,000"


def test_zero_switches_a_limit_off() -> None:
    with limits.use(limits.Limits(max_pods=0)):
        limits.check("max_pods", 10**9, "replicas")


def test_environment_overrides_defaults_and_flags_reach_child_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELMSIM_MAX_PODS", "50,000")
    assert limits.from_env().max_pods == 50_000
    monkeypatch.setenv("HELMSIM_MAX_PODS", "lots")
    with pytest.raises(InputError, match="^HELMSIM_MAX_PODS: --max-pods 'lots'"):
        limits.from_env()
    monkeypatch.delenv("HELMSIM_MAX_PODS")
    with limits.use(limits.Limits(max_events=7)):
        assert os.environ["HELMSIM_MAX_EVENTS"] == "7"
        assert limits.current().max_events == 7
    assert "HELMSIM_MAX_EVENTS" not in os.environ


def test_every_limit_has_a_flag_a_variable_and_docs() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "security.md").read_text()
    for f in limits.FIELDS:
        assert f.metadata["flag"] in doc and limits.env_var(f) in doc
        assert limits.show(f.name, f.default) in doc
