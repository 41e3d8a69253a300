"""A pre-install hook applies the chart's CRDs with ``kubectl apply -f https://…``; helmsim does
not read what a URL serves, so an upgrade adding a custom resource of one of them failed with
HS111 "no CRD … in the release", whose fix was to change a chart that works, and the note that
the URL's objects are not created was only in the full timeline."""

from __future__ import annotations

from realcharts_helpers import HERE
from typer.testing import CliRunner

from helmsim.cli import app

CHART = str(HERE / "hook-url-crds")


def _check() -> str:
    out = CliRunner().invoke(
        app, ["check", CHART, "-p", "kind", "--release-name", "m", "--upgrade-from", CHART, "--set", "withCR=true"]
    )
    return out.stdout


def test_the_report_says_the_urls_objects_are_not_created() -> None:
    text = " ".join(_check().split())
    assert "note: container apply of Job/default/crd-install runs `kubectl … https://raw.githubusercontent.com/" in text
    assert "what it serves is not read: the simulation creates none of its objects" in text


def test_hs111_says_its_verdict_rests_on_the_unread_url() -> None:
    text = " ".join(_check().split())
    assert (
        "but container apply of Job/default/crd-install applies objects from a URL helmsim does not read: if they include "
        "this CRD, the kind is served once that has run and this finding does not hold"
    ) in text
    assert "fix if that container installs the CRD of WorkflowTemplate, add the CRD to the cluster profile (crds:)" in text
