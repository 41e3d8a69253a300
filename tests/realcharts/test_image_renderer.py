"""grafana with its remote image renderer (tests/realcharts/README.md: image-renderer).

What a real cluster does with grafana-community/helm-charts charts/grafana and
ci/with-image-renderer-values.yaml: grafana reads the renderer's URL and its own callback URL
without dialling either at start, the renderer serves at once and opens grafana only for a
render request, so both Deployments are Ready, whatever the renderer's egress policy allows.
"""

from __future__ import annotations

from typing import Any

import pytest
from realcharts_helpers import HERE, behaviour_notes, restarts, simulate_chart
from typer.testing import CliRunner

from helmsim.cli import app

BARE = ("ci/bare-names-values.yaml",)




@pytest.mark.parametrize(
    ("values", "sets"),
    [
        ((), ()),  # the chart's own URLs (<name>.<namespace>), the renderer's limitEgress policy
        (BARE, ()),  # the URLs by the Services' short names, which helmsim maps to the Services
        (BARE, ("imageRenderer.networkPolicy.limitEgress=false",)),
    ],
)
def test_grafana_and_its_renderer_are_ready(values: tuple[str, ...], sets: tuple[str, ...]) -> None:
    # before the grafana-image-renderer entry, the renderer "needed" svc/default/image-renderer:3000
    # (its egress policy's pod port, which the Service does not expose: it serves 80) and
    # crash-looped until the 5m timeout (Stalled); with the short names grafana "needed" the
    # renderer through GF_RENDERING_SERVER_URL as well
    result = simulate_chart("image-renderer", values=values, sets=sets)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert release.message == (
        "Helm install succeeded for release default/image-renderer.v1 with chart image-renderer@0.1.0"
    )
    assert set(restarts(result).values()) == {0} and {k.split("/")[1] for k in restarts(result)} == {"grafana", "grafana-image-renderer"}
    renderer = behaviour_notes(result, "grafana-image-renderer")
    assert "needs nothing (catalog entry)" in renderer
    assert not [n for n in renderer if n.startswith("needs svc/")]
    assert not [n for n in behaviour_notes(result, "grafana") if n.startswith("needs svc/")]
    assert not [e for e in result.trace if "no behaviour known" in e.message]


def test_grafana_notes_the_renderer_urls_it_does_not_dial() -> None:
    result = simulate_chart("image-renderer", values=BARE)
    notes = [n for n in behaviour_notes(result, "grafana") if n.startswith("environment variable")]
    entry = "grafana (src/helmsim/catalog/grafana.yaml:5)"
    assert notes == [
        f"environment variable GF_RENDERING_CALLBACK_URL names svc/default/image-renderer:80, which catalog entry {entry} does not dial at start: not a need",
        f"environment variable GF_RENDERING_SERVER_URL names svc/default/image-renderer-image-renderer:8081, which catalog entry {entry} does not dial at start: not a need",
    ]


def test_a_renderer_image_the_catalog_does_not_know_keeps_its_policy_need() -> None:
    # no guess for other images: the egress policy still says what an unknown program reaches.
    # The policy allows grafana's pod port 3000; what a client dials is the Service port leading
    # there (image-renderer:80), so the need is that port, met once grafana is Ready; the report
    # says once that the behaviour was assumed
    image = ("imageRenderer.image.repository=example.com/renderer", "imageRenderer.image.tag=1")
    result = simulate_chart("image-renderer", sets=image)
    (release,) = result.releases
    assert release.outcome == "Ready"
    notes = behaviour_notes(result, "grafana-image-renderer")
    assert (
        "needs svc/default/image-renderer:80: NetworkPolicy default/image-renderer-image-renderer-egress "
        "allows egress to the pods behind Service default/image-renderer"
    ) in notes
    assert not [n for n in notes if n.startswith("needs svc/default/image-renderer:3000")]
    args = ["simulate", str(HERE / "image-renderer"), "-p", "kind", "--no-color"]
    out: Any = CliRunner().invoke(app, [*args, *(a for s in image for a in ("--set", s))], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    note = (
        "note: no behaviour known for image example.com/renderer:1: assumed to start and succeed, connecting at start "
        "to svc/default/image-renderer:80 and exiting 1 when one does not answer (it runs until stopped)"
    )
    assert out.stdout.splitlines().count(note) == 1
