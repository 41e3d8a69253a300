"""``helmsim render``: render a chart with Helm's own engine, like `helm template`."""

from __future__ import annotations

from typing import Annotated

import typer

from helmsim import render as rendering
from helmsim.cli import options
from helmsim.cli.app import command, console, err_console
from helmsim.inputs import load_release


@command("render")
def render_cmd(
    target: Annotated[str, typer.Argument(help="Chart directory or .tgz, rendered YAML file or directory, or - for stdin.")],
    values: options.Values = None,
    set_: options.Set = None,
    release_name: options.ReleaseName = rendering.DEFAULT_RELEASE_NAME,
    namespace: options.Namespace = rendering.DEFAULT_NAMESPACE,
    kube_version: options.KubeVersion = None,
    api_versions: options.ApiVersions = None,
    profile: options.Profile = None,
    include_crds: options.IncludeCrds = False,
    show_secrets: Annotated[
        bool,
        typer.Option("--show-secrets", help="Print secrets as rendered: Secret data, secret-like keys and values (redacted by default, docs/security.md)."),
    ] = False,
) -> None:
    """Render a chart with Helm's engine and print the manifest as `helm template` does."""
    kube, apis = options.capabilities(profile, kube_version, api_versions)
    opts = rendering.RenderOptions(
        release_name=release_name,
        namespace=namespace,
        values=rendering.load_values(values or [], set_ or []),
        kube_version=kube,
        api_versions=apis,
        values_files=tuple(values or ()),
    )
    release = load_release(target, opts, include_crds=include_crds)
    for note in release.notes:
        err_console.print(f"warning: {note}", markup=False)
    release.parse(namespace)  # validate: bad documents are reported with file and line
    release.parse_crds()
    files = [
        rendering.RenderedFile(path=p, content=c) for p, c in (*release.crd_files, *release.files)
    ]
    text = rendering.format_like_helm_template(files, redact_secrets=not show_secrets)
    console.document(text)  # redacted above (or shown on request): only controls escaped
