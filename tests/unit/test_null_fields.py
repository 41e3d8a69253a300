"""Null means absent everywhere (issue 13 item 1): every field of every example object set to null.

The API server decodes ``metadata.annotations:`` with nothing under it, ``labels: null`` or a
null spec field as if the key were absent (k8s.io/apimachinery json decoding into Go structs;
structural pruning for custom resources), and Helm's client reads such objects without
complaint. So for each object the example charts render, each of its fields is set to null in
turn and every stage runs on the result: parse, plan (install and upgrade), kstatus (each
reader, also on live objects with status), diff; a sample is simulated end to end and reported
in text and JSON. No stage may raise; the only error allowed is bad input for the fields without which a document is not an
object at all (``kind``, ``apiVersion``, ``metadata``, ``metadata.name``).
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from helmsim import kstatus, render
from helmsim.cluster.profile import load_profile
from helmsim.diffing import diff_objects
from helmsim.errors import InputError
from helmsim.flux.inputs import default_helmrelease
from helmsim.helm.actions import ChartRelease
from helmsim.helm.plan import plan_install, plan_upgrade
from helmsim.inputs import load_release
from helmsim.manifests import Resource, parse_documents
from helmsim.report import simulate as simulate_report
from helmsim.simulate import ChartSource, ReleaseInput, simulate

ROOT = Path(__file__).resolve().parents[2]
CHARTS = (
    ROOT / "examples" / "seed1-migrate-race",
    ROOT / "examples" / "seed2-hf-cache",
    ROOT / "tests" / "fixtures" / "charts" / "caps",
    ROOT / "tests" / "scenario" / "charts" / "mini",
    ROOT / "tests" / "fixtures" / "e2e" / "charts" / "model-predictor",
)
PROFILE = "cilium-always"  # renders the Cilium flavour too (CiliumNetworkPolicy objects)
NAMESPACE = "default"
# Without these a document is not a Kubernetes object: bad input (exit 2), never a crash.
IDENTITY = {("kind",), ("apiVersion",), ("metadata",), ("metadata", "name")}
NOW = datetime(2026, 1, 1, tzinfo=UTC)

Path_ = tuple[Any, ...]
LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@cache
def rendered(chart: Path) -> tuple[tuple[str, str], ...]:
    """The chart's rendered files (templates and crds/) under the profile's capabilities."""
    profile = load_profile(PROFILE)
    opts = render.RenderOptions(
        release_name=chart.name,
        namespace=NAMESPACE,
        kube_version=profile.kubernetes_version,
        api_versions=tuple(profile.capability_api_versions()),
    )
    rel = load_release(str(chart), opts, include_crds=True)
    return rel.files + rel.crd_files


@cache
def crd_files(chart: Path) -> tuple[tuple[str, str], ...]:
    """The chart's ``crds/`` files (a suffix of :func:`rendered`)."""
    return load_release(str(chart), render.RenderOptions(), include_crds=True).crd_files


@cache
def file_documents(chart: Path, fi: int) -> list[Any]:
    """The YAML documents of one rendered file (parsed once)."""
    return list(yaml.load_all(rendered(chart)[fi][1], Loader=LOADER))


def field_paths(value: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every mapping key's path in ``value`` (through lists, by index)."""
    if isinstance(value, dict):
        for key, sub in value.items():
            yield (*prefix, key)
            yield from field_paths(sub, (*prefix, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from field_paths(sub, (*prefix, i))


def documents(chart: Path) -> list[tuple[int, int, dict[str, Any]]]:
    """(file index, document index, object) of every object the chart renders."""
    out = []
    for fi in range(len(rendered(chart))):
        for di, doc in enumerate(file_documents(chart, fi)):
            if isinstance(doc, dict):
                out.append((fi, di, doc))
    return out


CASES = [
    (chart, fi, di, path)
    for chart in CHARTS
    for fi, di, doc in documents(chart)
    for path in field_paths(doc)
]


def with_null(chart: Path, fi: int, di: int, path: Path_) -> tuple[tuple[str, str], ...]:
    """The chart's files with the field at ``path`` of one document set to null."""
    files = list(rendered(chart))
    name, _ = files[fi]
    files[fi] = (name, nulled_document(chart, fi, di, path))
    return tuple(files)


def nulled_document(chart: Path, fi: int, di: int, path: Path_) -> str:
    """One rendered document as YAML with the field at ``path`` set to null."""
    doc = copy.deepcopy(file_documents(chart, fi)[di])
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = None
    return yaml.dump(doc, Dumper=DUMPER, sort_keys=False)



def parse(files: tuple[tuple[str, str], ...]) -> list[Resource]:
    return parse_documents(files, namespace=NAMESPACE).resources


def test_cases_cover_every_chart() -> None:
    # a chart that renders nothing would make the property vacuous
    assert {c for c, *_ in CASES} == set(CHARTS)
    assert len(CASES) > 500


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_every_null_field_through_parse_plan_kstatus_diff(chart: Path) -> None:
    original = parse(rendered(chart))
    assert len(original) == len(documents_index(chart))  # one resource per rendered document
    by_doc = {(documents_index(chart)[i]): res for i, res in enumerate(original)}
    cluster_scoped = tuple(sorted({r.kind for r in original if r.namespace is None}))
    for c, fi, di, path in CASES:
        if c != chart:
            continue
        name = rendered(chart)[fi][0]
        try:
            changed = parse_documents(
                [(name, nulled_document(chart, fi, di, path))], namespace=NAMESPACE, cluster_scoped=cluster_scoped
            ).resources
        except InputError as err:
            assert path in IDENTITY or path[:1] == ("metadata",) and len(path) == 1, (path, err)
            assert err.file, err  # bad input names the file
            continue
        assert path not in IDENTITY or path == ("metadata", "name"), path
        # null = absent: every stage reads the object as the original with that key removed
        resources = [changed[0] if key == (fi, di) else res for key, res in by_doc.items()]
        plan_install(resources)
        plan_upgrade(original, resources)
        plan_upgrade(resources, original)
        for reader in kstatus.READERS:
            kstatus.read(changed[0].body, reader=reader, now=NOW)
        diff_objects(original, resources)


@cache
def documents_index(chart: Path) -> tuple[tuple[int, int], ...]:
    """(file index, document index) of each parsed resource of the chart, in parse order."""
    return tuple((fi, di) for fi, di, _ in documents(chart))


def test_null_is_absent_in_parsed_objects() -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n  labels: null\n"
        "data:\n  a: null\n  b: '1'\nbinaryData: ~\n"
    )
    (res,) = parse((("t.yaml", text),))
    assert res.body == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"b": "1"}}
    assert res.annotations == {} and res.labels == {}


def test_kstatus_reads_live_objects_with_any_field_null() -> None:
    result = _simulate(CHARTS[1], rendered(CHARTS[1]))
    assert result.sim is not None
    objs = [o for kind in ("Pod", "PersistentVolumeClaim", "Deployment", "Job", "ReplicaSet", "StatefulSet", "Service")
            for o in result.sim.store.list(kind)]
    assert objs
    for obj in objs:
        for path in field_paths(obj):
            nulled = copy.deepcopy(obj)
            target = nulled
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = None
            for reader in kstatus.READERS:
                kstatus.read(nulled, reader=reader, now=NOW, pods=[nulled] if obj.get("kind") == "Pod" else ())


def _simulate(chart: Path, files: tuple[tuple[str, str], ...]) -> Any:
    profile = load_profile(PROFILE)
    crd_paths = {path for path, _ in crd_files(chart)}
    resources = parse_documents(files, namespace=NAMESPACE).resources
    crds = tuple(r for r in resources if r.source.path in crd_paths)
    hooks_and_manifest = tuple(r for r in resources if r.source.path not in crd_paths)
    hr = default_helmrelease(chart.name, NAMESPACE)
    cr = ChartRelease(name=hr.release_name, namespace=hr.target_namespace, chart=f"{chart.name}@0", resources=hooks_and_manifest, crds=crds)
    release = ReleaseInput(hr, ChartSource(str(chart)))
    return simulate(profile, [release], horizon=900.0, prepared=({hr.ref: cr}, {}))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(case=st.sampled_from(CASES))
def test_simulating_and_reporting_with_a_null_field_never_raises(case: tuple[Path, int, int, Path_]) -> None:
    # The API server refuses an object whose required fields are gone (Helm's install then fails
    # with its text); every other object is simulated. Either way no stage raises.
    chart, fi, di, path = case
    files = with_null(chart, fi, di, path)
    try:
        parse(files)
    except InputError:
        assert path in IDENTITY or path == ("metadata",), path
        return
    result = _simulate(chart, files)
    assert {o.outcome for o in result.releases} <= {"Ready", "Failed", "Stalled", "Blocked", "Progressing"}
    json.loads(simulate_report.to_json(result))
    simulate_report.render_text(result, Console(file=io.StringIO(), width=120))
