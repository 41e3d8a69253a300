"""Turn what the user points at (a chart, a rendered file or directory, stdin) into documents."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct

from helmsim import render
from helmsim.manifests import ParseResult, parse_documents, read_manifest_input

if TYPE_CHECKING:
    from helmsim.helm.record import ChartRecord


class ReleaseInput(Struct, frozen=True):
    """Rendered files of one release, and the chart they came from when there was one."""

    files: tuple[tuple[str, str], ...]
    crd_files: tuple[tuple[str, str], ...] = ()
    chart_name: str = ""
    chart_version: str = ""
    from_chart: bool = False
    notes: tuple[str, ...] = ()
    """Helm's warnings about the chart (see ``helmsim.render.RenderedChart.notes``)."""
    record: ChartRecord | None = None
    """The chart's part of Helm's release record (``load_release(record=True)``)."""
    release_notes: str = ""
    """The rendered ``NOTES.txt`` Helm stores with the release."""

    def parse(self, namespace: str, cluster_scoped: tuple[str, ...] = ()) -> ParseResult:
        """Resources of this release with namespaces defaulted to ``namespace``."""
        return parse_documents(self.files, namespace=namespace, cluster_scoped=cluster_scoped)

    def parse_crds(self) -> ParseResult:
        """The chart's ``crds/`` objects (not templated, never hooks)."""
        return parse_documents(self.crd_files)


def load_release(
    target: str, opts: render.RenderOptions, *, include_crds: bool = False, record: bool = False
) -> ReleaseInput:
    """Render ``target`` when it is a chart; otherwise read it as already-rendered YAML."""
    if target != "-" and render.is_chart_dir(Path(target)):
        chart = render.render_chart(target, opts, include_crds=include_crds, record=record)
        return ReleaseInput(
            files=tuple((f.path, f.content) for f in chart.files if not f.is_crd_file),
            crd_files=tuple((f.path, f.content) for f in chart.files if f.is_crd_file),
            chart_name=chart.chart_name,
            chart_version=chart.chart_version,
            from_chart=True,
            notes=chart.notes,
            record=chart.record,
            release_notes=chart.release_notes,
        )
    return ReleaseInput(files=tuple(read_manifest_input(target)))
