"""Every reader, in-process, on generated broken input: it returns or raises one-line InputError.

Each reader gets Hypothesis-drawn inputs (which shrink to a minimal failing case) and batches of
inputs derived from one drawn seed (which keep the suite fast); together about 10,000 cases.
``HELMSIM_FUZZ_SCALE`` multiplies them; ``HELMSIM_FUZZ=random`` explores new ones instead of the
fixed, derandomized set CI runs.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from fuzz_inputs_helpers import (
    batches,
    encode,
    fuzz_settings,
    manifest_seeds,
    reads_or_refuses,
    seeds,
    yaml_text,
)
from hypothesis import given
from hypothesis import strategies as st

from helmsim import kstatus, render, yamlio
from helmsim.cli.status import load_objects
from helmsim.cluster.profile import load_profile
from helmsim.config import load_config
from helmsim.explain.observation import parse_observation
from helmsim.flux import sources
from helmsim.flux.inputs import flux_tree_from_files, load_flux_tree
from helmsim.helm.plan import plan_install
from helmsim.manifests import parse_documents
from helmsim.scenario import parse_scenario, scenario_profile
from helmsim.simulate import values_from_refs

_DIR = Path(tempfile.mkdtemp(prefix="helmsim-fuzz-"))
POOLS = {
    "profile": seeds("profile"),
    "scenario": seeds("scenario"),
    "observation": seeds("observation"),
    "helmrelease": seeds("helmrelease"),
    "values": seeds("values"),
    "config": seeds("config"),
    "objects": seeds("objects"),
    "manifest": manifest_seeds(),
    "sources": seeds("sources"),
    "chartyaml": seeds("chartyaml"),
}
POOLS["yaml"] = [d for pool in POOLS.values() for d in pool[:12]]


def _file(name: str, text: str) -> Path:
    path = _DIR / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(encode(text))
    return path


def read_yaml(text: str) -> None:
    for doc in yamlio.load_documents(text, "f.yaml"):
        json.dumps(doc.value, allow_nan=True)  # every decoded value is JSON-shaped
    yamlio.key_lines(text)


def read_profile(text: str) -> None:
    profile = load_profile(str(_file("profile.yaml", text)))
    profile.helm_api_versions()
    profile.to_data()
    for model in profile.operators:
        assert model.label and (model.ready_after is None or model.ready_after >= 0)
        model.covers("monitoring.coreos.com", "Prometheus")
    for entry in profile.unmapped_releases:
        entry.matches("cert-manager", "cert-manager/cert-manager")


def read_scenario(text: str) -> None:
    path = _file("scenarios/s.helmsim.yaml", text)
    loaded = parse_scenario(yamlio.read_text(path), path)
    if isinstance(loaded.scenario.profile, dict):
        scenario_profile(loaded)
    for b in loaded.scenario.behaviours:
        b.to_override()
    for f in loaded.scenario.faults:
        assert f.kind


def read_helmrelease(text: str) -> None:
    tree = flux_tree_from_files([("hr.yaml", text), ("other.yaml", text)][: 1 + len(text) % 2])
    for hr in tree.helmreleases:
        assert hr.release_name and hr.chart_name is not None
        hr.timeout_for("install")
        hr.dependencies()
        hr.remediate_last_failure("upgrade")
        values_from_refs(hr, tree.objects)


_CHART_SOURCES = Path(__file__).resolve().parents[1] / "realcharts" / "chart-sources"


def read_sources(text: str) -> None:
    tree = flux_tree_from_files([("tree.yaml", text)])
    for hr in tree.helmreleases:
        for mapped in (str(_CHART_SOURCES / "charts" / "webapp"), None):
            sources.resolve(hr, mapped, tree.objects, lambda: _CHART_SOURCES)


_RANGES = load_flux_tree([str(_CHART_SOURCES / "flux")])


def read_chart_yaml(text: str) -> None:
    chart = _file("chart/Chart.yaml", text).parent
    sources.chart_meta(chart)
    for hr in _RANGES.helmreleases:  # the fuzzed name and version against each range
        sources.resolve(hr, str(chart), _RANGES.objects)


def read_config(text: str) -> None:
    cfg = load_config(_file(".helmsim.yaml", text))
    cfg.ignored("HS102", "x", "PersistentVolumeClaim/a/hf-cache", "a/b")
    cfg.severity_for("HS112", "x")


def read_values(text: str) -> None:
    json.dumps(render.load_values([_file("values.yaml", text)]), allow_nan=False)  # Helm gets JSON


def read_objects(text: str) -> None:
    objects = load_objects(_file("objects.yaml", text))
    pods = [o for o in objects if o.get("kind") == "Pod"]
    for obj in objects:
        for reader in ("core", "flux-wait", "flux-wait-jobs", "hook"):
            kstatus.read(obj, reader=reader, pods=pods)


def read_observation(text: str) -> None:
    # an eventsFile names the events file next to the observation (another reader, same rules)
    _file("observations/seed1-incident.events.yaml", (Path(__file__).parents[2] / "examples/explain/seed1-incident.events.yaml").read_text())
    path = _file("observations/o.observation.yaml", text)
    parse_observation(yamlio.read_text(path), path)


def read_manifest(text: str) -> None:
    parsed = parse_documents([("chart/templates/a.yaml", text), ("chart/templates/b.yaml", text[::-1][:0])], namespace="ns")
    plan_install(parsed.resources, [])


READERS: dict[str, tuple[Callable[[str], None], int, int]] = {
    # reader, Hypothesis-drawn examples, seeded batches of 6
    "yaml": (read_yaml, 200, 260),
    "profile": (read_profile, 100, 130),
    "scenario": (read_scenario, 100, 160),
    "observation": (read_observation, 100, 160),
    "helmrelease": (read_helmrelease, 150, 200),
    "config": (read_config, 100, 160),
    "values": (read_values, 100, 160),
    "objects": (read_objects, 150, 200),
    "manifest": (read_manifest, 150, 200),
    "sources": (read_sources, 100, 120),
    "chartyaml": (read_chart_yaml, 100, 120),
}


@pytest.mark.parametrize("kind", list(READERS))
def test_hypothesis_drawn_inputs(kind: str) -> None:
    reader, examples, _ = READERS[kind]

    @fuzz_settings(examples)
    @given(yaml_text(POOLS[kind]))
    def run(text: str) -> None:
        reads_or_refuses(lambda: reader(text))

    run()


@pytest.mark.parametrize("kind", list(READERS))
def test_seeded_batches(kind: str) -> None:
    reader, _, batch_count = READERS[kind]

    @fuzz_settings(batch_count)
    @given(batches(POOLS[kind], size=6))
    def run(texts: list[str]) -> None:
        for text in texts:
            reads_or_refuses(lambda: reader(text), shown=text)

    run()


@fuzz_settings(300)
@given(st.text(max_size=200))
def test_yaml_of_arbitrary_text(text: str) -> None:
    reads_or_refuses(lambda: yamlio.load_documents(text, "f.yaml"))


@fuzz_settings(200)
@given(st.binary(max_size=200))
def test_files_of_arbitrary_bytes(data: bytes) -> None:
    path = _DIR / "bytes.yaml"
    path.write_bytes(data)
    reads_or_refuses(lambda: yamlio.load_documents(yamlio.read_text(path), str(path)))


_SET = st.one_of(
    st.text(alphabet="ab.=,{}[]\\0123:-\"' ", max_size=20),
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["a", "a.b", "a[0]", "a[9999999]", "a.b[1].c", "[]", ""]), st.text(max_size=8)),
)


@fuzz_settings(150)
@given(st.lists(_SET, min_size=1, max_size=2))
def test_set_expressions(exprs: list[str]) -> None:
    reads_or_refuses(lambda: json.dumps(render.load_values([], exprs), allow_nan=False))
