"""The `fleet:` matrix of .helmsim.yaml: schema errors name the file and line, globs expand to
one rehearsal per file, and any YAML under `fleet:` either loads or is one InputError."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helmsim.config import load_config
from helmsim.errors import InputError
from helmsim.fleet import matrix as fm
from helmsim.yamlio import key_lines
from fleet_helpers import RULES, write_matrix


def specs_of(config: Path) -> list[fm.RehearsalSpec]:
    cfg = load_config(config)
    assert cfg.fleet is not None
    text = config.read_text(encoding="utf-8")
    return fm.expand(cfg.fleet, base=config.parent, source=str(config), lines=key_lines(text))


def test_each_values_item_is_a_rehearsal_and_a_glob_one_per_file(tmp_path: Path) -> None:
    config = write_matrix(tmp_path)
    (tmp_path / "values" / "a-values.yaml").write_text("x: 1\n", encoding="utf-8")
    specs = specs_of(config)
    assert [s.key for s in specs] == [
        "race [(chart values)]",
        f"race [{fm.display_path(tmp_path / 'values' / 'a-values.yaml')}]",
        f"race [{fm.display_path(tmp_path / 'values' / 'slow-values.yaml')}]",
        "claim [(chart values)]",
    ]
    assert [s.index for s in specs] == [0, 1, 2, 3]


def test_a_list_is_one_rehearsal_with_its_files_layered(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("a: 1\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("b: 1\n", encoding="utf-8")
    config = tmp_path / ".helmsim.yaml"
    config.write_text(
        f"fleet:\n  releases:\n    - target: {RULES / 'HS101' / 'failing'}\n      values: [[a.yaml, b.yaml]]\n",
        encoding="utf-8",
    )
    (spec,) = specs_of(config)
    assert [Path(v).name for v in spec.values] == ["a.yaml", "b.yaml"]


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("fleet:\n  releases:\n    - target: {chart}\n      valuez: []\n", 4, "releases[0].valuez: Extra inputs"),
        ("fleet:\n  runs: -1\n  releases:\n    - target: {chart}\n", 2, "fleet.runs: Input should be greater than or equal to 0"),
        ("fleet:\n  releases: []\n", 2, "fleet.releases: Tuple should have at least 1 item"),
        ("fleet:\n  releases:\n    - target: nowhere\n", 3, "releases[0].target: nowhere: no such chart or directory"),
        ("fleet:\n  releases:\n    - target: {chart}\n      values:\n        - ci/*.yaml\n", 5, "releases[0].values[0]: ci/*.yaml: no file matches"),
        ("fleet:\n  releases:\n    - target: {chart}\n      values: [missing.yaml]\n", 4, "releases[0].values[0]: missing.yaml: no such file"),
        ("fleet:\n  releases:\n    - target: {chart}\n    - target: {chart}\n", 4, "already used by releases[0]"),
    ],
)
def test_bad_matrices_name_the_file_and_line(tmp_path: Path, body: str, line: int, message: str) -> None:
    config = tmp_path / ".helmsim.yaml"
    config.write_text(body.format(chart=RULES / "HS101" / "failing"), encoding="utf-8")
    with pytest.raises(InputError) as err:
        specs_of(config)
    assert err.value.file == str(config)
    assert err.value.line == line
    assert message in err.value.message


def test_the_matrix_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fm, "MAX_REHEARSALS", 2)
    config = write_matrix(tmp_path)
    (tmp_path / "values" / "b-values.yaml").write_text("x: 1\n", encoding="utf-8")
    with pytest.raises(InputError, match="more than 2 rehearsals"):
        specs_of(config)


scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=8))
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["releases", "target", "values", "runs", "seed", "profiles", "name", "chart", "x"]),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fleet=trees)
def test_any_fleet_key_loads_or_is_one_input_error(tmp_path: Path, fleet: object) -> None:
    config = tmp_path / ".helmsim.yaml"
    config.write_text(yaml.safe_dump({"fleet": fleet}), encoding="utf-8")
    try:
        cfg = load_config(config)
        if cfg.fleet is not None:
            specs_of(config)
    except InputError as err:
        assert err.file == str(config)
        assert "\n" not in str(err)
