"""Option declarations shared by the commands that render a chart."""

from __future__ import annotations

from typing import Annotated

import typer

from helmsim import taskpool
from helmsim.cluster.latency import to_seconds
from helmsim.errors import InputError
from helmsim.render import SetValue, set_values

Values = Annotated[
    list[str] | None,
    typer.Option("--values", "-f", help="Values file, merged in order (repeatable).", metavar="FILE"),
]
Set = Annotated[
    list[str] | None,
    typer.Option("--set", help="Set values on the command line, Helm strvals syntax (repeatable).", metavar="K=V"),
]
Output = Annotated[
    str | None,
    typer.Option("--output", "-o", help="Write the output to this file (atomically) instead of stdout.", metavar="FILE"),
]
SetString = Annotated[
    list[str] | None,
    typer.Option("--set-string", help="Like --set, every value a string (repeatable).", metavar="K=V"),
]
SetFile = Annotated[
    list[str] | None,
    typer.Option("--set-file", help="Set a value to the content of a file (repeatable).", metavar="K=PATH"),
]
SetJson = Annotated[
    list[str] | None,
    typer.Option("--set-json", help="Set a value to a JSON document (repeatable).", metavar="K=JSON"),
]
SetLiteral = Annotated[
    list[str] | None,
    typer.Option("--set-literal", help="Set a value to the literal text after = (repeatable).", metavar="K=TEXT"),
]


Repo = Annotated[
    str | None,
    typer.Option("--repo", help="Chart repository URL: TARGET is a chart name in it, pulled as helm pull does.", metavar="URL"),
]
ChartVersion = Annotated[
    str | None,
    typer.Option("--version", help="Version (or semver range) of a remote chart (oci:// or --repo); default the newest.", metavar="VERSION"),
]
PlainHttp = Annotated[
    bool, typer.Option("--plain-http", help="Pull a remote chart over HTTP instead of HTTPS (a local registry).")
]
InsecureSkipTlsVerify = Annotated[
    bool, typer.Option("--insecure-skip-tls-verify", help="Pull a remote chart without verifying the server's certificate.")
]


def chart_target(target: str, repo: str | None, version: str | None, plain_http: bool, insecure: bool) -> str:
    """``target``, or the local archive of the remote chart it names (helmsim.remote)."""
    from helmsim import remote

    if not remote.is_remote(target, repo):
        if version is not None:
            raise InputError("--version applies to a remote chart (oci://… or --repo)")
        return target
    return remote.pull_chart(target, version=version, repo=repo, plain_http=plain_http, insecure=insecure)


def value_sets(
    set_: list[str] | None,
    set_string: list[str] | None,
    set_file: list[str] | None,
    set_json: list[str] | None,
    set_literal: list[str] | None,
) -> list[SetValue]:
    """The --set flags in the order Helm applies them (helmsim.render.SET_ORDER)."""
    return set_values(set=set_, set_string=set_string, set_file=set_file, set_json=set_json, set_literal=set_literal)


Backend = Annotated[
    str,
    typer.Option(
        "--backend",
        help="Where the sampled runs go: local (processes on this machine) or ray (a Ray cluster; pip install 'helmsim\\[ray]').",
        metavar="local|ray",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="With --backend ray: auto (the cluster `ray start` runs here), HOST:PORT (a cluster's GCS) or ray://HOST:10001 (Ray Client); default RAY_ADDRESS, else a new local Ray.",
        metavar="auto|HOST:PORT|ray://HOST:10001",
    ),
]
Timeline = Annotated[
    bool,
    typer.Option("--timeline", help="Also print the causal detail: each finding's chain, the Helm history and the trace timeline."),
]
Quiet = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Print only the final summary line (and no progress); the exit code says the rest."),
]
NoColor = Annotated[bool, typer.Option("--no-color", help="No colours in the text report (as NO_COLOR=1).")]
ReleaseName = Annotated[str, typer.Option("--release-name", help="Release name.", metavar="NAME")]
Namespace = Annotated[str, typer.Option("--namespace", "-n", help="Release namespace.")]
KubeVersion = Annotated[
    str | None,
    typer.Option("--kube-version", help="Kubernetes version for .Capabilities (e.g. 1.31.0).", metavar="VERSION"),
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
RepositoryRoot = Annotated[
    str | None,
    typer.Option(
        "--repository-root",
        help="Where the paths of charts from a GitRepository or Bucket (spec.chart.spec.chart: ./charts/x) are read; default the git work tree holding the target.",
        metavar="DIR",
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


def backend(name: str, ray_address: str | None, workers: int | None = None) -> taskpool.Backend:
    """The :class:`helmsim.taskpool.Backend` the flags name (bad names are one-line errors)."""
    if name not in taskpool.BACKENDS:
        raise InputError(f"--backend {name!r}: expected local or ray")
    return taskpool.Backend(name, workers, ray_address)  # type: ignore[arg-type]


def capabilities(
    profile: str | None, kube_version: str | None, api_versions: list[str] | None
) -> tuple[str | None, tuple[str, ...]]:
    """Kubernetes version and API versions from a profile, overridden/extended by the flags."""
    extra = tuple(api_versions or ())
    if profile is None:
        return kube_version, extra
    from helmsim.cluster.profile import load_profile

    prof = load_profile(profile)
    return kube_version or prof.kubernetes_version, tuple(prof.capability_api_versions(kube_version)) + extra


def seconds(text: str | None, default: float, flag: str, *, positive: bool = False) -> float:
    """A duration flag (``90``, ``5m``, ``1h30m``) in seconds; ``default`` when not given."""
    if text is None:
        return default
    try:
        value = to_seconds(text)
    except ValueError as err:
        raise InputError(f"{flag} {text!r}: {err}") from None
    if positive and value <= 0:
        raise InputError(f"{flag} {text!r}: must be longer than 0s")
    return value
