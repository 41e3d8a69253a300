"""``helmsim render``: render a chart with Helm's own engine, like `helm template`."""

from __future__ import annotations

from typing import Annotated

import typer

from helmsim import render as rendering
from helmsim.cli import options
from helmsim.cli.app import command, emit, err_console
from helmsim.inputs import load_release


@command("render")
def render_cmd(
    target: Annotated[str, typer.Argument(help="Chart directory or .tgz, rendered YAML file or directory, or - for stdin.")],
    values: options.Values = None,
    set_: options.Set = None,
    set_string: options.SetString = None,
    set_file: options.SetFile = None,
    set_json: options.SetJson = None,
    set_literal: options.SetLiteral = None,
    repo: options.Repo = None,
    chart_version: options.ChartVersion = None,
    plain_http: options.PlainHttp = False,
    insecure_skip_tls_verify: options.InsecureSkipTlsVerify = False,
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
    show_only_: Annotated[
        list[str] | None,
        typer.Option(
            "--show-only",
            "-s",
            help="Only the documents rendered from templates matching this path glob, e.g. templates/job.yaml (repeatable).",
            metavar="TEMPLATE",
        ),
    ] = None,
    output: options.Output = None,
) -> None:
    """Render a chart with Helm's engine and print the manifest as `helm template` does.

    Documents come in `helm template`'s order: crds/ (with --include-crds), the manifest sorted
    by kind (Helm's InstallOrder), then the hooks.

    Examples:

      helmsim render examples/seed1-migrate-race -s templates/agent-manager/migrate-job.yaml
      helmsim render examples/seed2-hf-cache -f examples/seed2-hf-cache/values.yaml --set-string image.tag=1.2 -o manifest.yaml
    """
    target = options.chart_target(target, repo, chart_version, plain_http, insecure_skip_tls_verify)
    kube, apis = options.capabilities(profile, kube_version, api_versions)
    opts = rendering.RenderOptions(
        release_name=release_name,
        namespace=namespace,
        values=rendering.load_values(values or [], options.value_sets(set_, set_string, set_file, set_json, set_literal)),
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
        *(rendering.RenderedFile(path=p, content=c, is_crd_file=True) for p, c in release.crd_files),
        *(rendering.RenderedFile(path=p, content=c) for p, c in release.files),
    ]
    docs = rendering.helm_template_order(files, from_chart=release.from_chart)
    if show_only_:
        docs = rendering.show_only(docs, show_only_, release.chart_name or target)
    # redacted here (or shown on request); emit escapes control characters on a terminal
    emit(rendering.format_like_helm_template(docs, redact_secrets=not show_secrets), output)
