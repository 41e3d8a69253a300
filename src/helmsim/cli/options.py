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
Profile = Annotated[
    str | None,
    typer.Option(
        "--profile",
        "-p",
        help="Cluster profile (built-in name or YAML file): its Kubernetes version and API versions "
        "become the render's capabilities.",
        metavar="NAME|FILE",
    ),
]


def capabilities(
    profile: str | None, kube_version: str | None, api_versions: list[str] | None
) -> tuple[str | None, tuple[str, ...]]:
    """Kubernetes version and API versions from a profile, overridden/extended by the flags."""
    extra = tuple(api_versions or ())
    if profile is None:
        return kube_version, extra
    from helmsim.cluster.profile import load_profile

    prof = load_profile(profile)
    return kube_version or prof.kubernetes_version, tuple(prof.helm_api_versions()) + extra
