"""Option declarations shared by the commands that render a chart."""

from __future__ import annotations

from typing import Annotated

import typer

Values = Annotated[
    list[str] | None,
    typer.Option("--values", "-f", help="Values file, merged in order (repeatable).", metavar="FILE"),
]
Set = Annotated[
    list[str] | None,
    typer.Option("--set", help="Set values on the command line, Helm strvals syntax (repeatable).", metavar="K=V"),
]
ReleaseName = Annotated[str, typer.Option("--release-name", help="Release name.")]
Namespace = Annotated[str, typer.Option("--namespace", "-n", help="Release namespace.")]
KubeVersion = Annotated[
    str | None, typer.Option("--kube-version", help="Kubernetes version for .Capabilities (e.g. 1.31.0).")
]
ApiVersions = Annotated[
    list[str] | None,
    typer.Option(
        "--api-versions",
        "-a",
        help="API version (group/version or group/version/Kind) served by the cluster (repeatable).",
        metavar="GV[/KIND]",
    ),
]
IncludeCrds = Annotated[bool, typer.Option("--include-crds", help="Include the chart's crds/ files.")]
