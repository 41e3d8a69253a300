"""``helmsim plan``: the order and shape in which Helm applies a release."""

from __future__ import annotations

import io
from enum import Enum
from typing import Annotated, Any

import typer

from helmsim import render as rendering
from helmsim.cli import options
from helmsim.cli.app import command, console, emit, err_console
from helmsim.helm import build, lookup
from helmsim.helm.plan import Plan, plan_install, plan_upgrade
from helmsim.errors import InputError
from helmsim.flux import postrender
from helmsim.flux.helmrelease import HelmRelease
from helmsim.inputs import ReleaseInput, load_release
from helmsim.manifests import ParseResult, parse_objects
from helmsim.report import plan as plan_report
from helmsim.report.safe import text_console


# the schemas strategic-merge patches use when no version is given (a profile's default version)
DEFAULT_KUBE_VERSION = "1.31.0"


class PlanFormat(str, Enum):
    text = "text"
    json = "json"


@command("plan")
def plan_cmd(
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
    upgrade_from: Annotated[
        str | None,
        typer.Option(
            "--upgrade-from",
            help="Plan an upgrade from this previous release: a chart (rendered with "
            "--upgrade-from-values/--upgrade-from-set) or a previously rendered manifest.",
            metavar="CHART|FILE|DIR",
        ),
    ] = None,
    upgrade_from_values: Annotated[
        list[str] | None,
        typer.Option("--upgrade-from-values", help="Values file of the previous release (repeatable).", metavar="FILE"),
    ] = None,
    upgrade_from_set: Annotated[
        list[str] | None,
        typer.Option("--upgrade-from-set", help="--set of the previous release (repeatable).", metavar="K=V"),
    ] = None,
    server_side: Annotated[
        bool,
        typer.Option(
            "--server-side/--client-side",
            help="Upgrade with server-side apply (Helm v4 on a release it installed) or client-side "
            "apply (releases first installed by Helm 3 keep it; the default).",
        ),
    ] = False,
    helmrelease: Annotated[
        list[str] | None,
        typer.Option(
            "--helmrelease",
            help="HelmRelease YAML file or directory: its postRenderers, commonMetadata and origin "
            "labels are applied as helm-controller applies them (the release using this chart).",
            metavar="FILE|DIR",
        ),
    ] = None,
    fmt: Annotated[PlanFormat, typer.Option("--format", help="Output format.")] = PlanFormat.text,
    output: options.Output = None,
) -> None:
    """Print Helm's plan: crds/, hooks in order, the manifest kind group by kind group, the wait.

    Exit code 0 when Helm would carry the plan out, 1 when it would fail (an immutable field
    changed, an update Helm refuses, a kind the cluster does not serve), 2 on bad input.

    Examples:

      helmsim plan examples/seed1-migrate-race --profile cilium-always
      helmsim plan examples/seed2-hf-cache --upgrade-from examples/seed2-hf-cache --upgrade-from-set image.tag=old --format json -o plan.json
    """
    target = options.chart_target(target, repo, chart_version, plain_http, insecure_skip_tls_verify)
    kube, apis = options.capabilities(profile, kube_version, api_versions)
    new_opts = rendering.RenderOptions(
        release_name=release_name,
        namespace=namespace,
        values=rendering.load_values(values or [], options.value_sets(set_, set_string, set_file, set_json, set_literal)),
        values_files=tuple(values or ()),
        is_upgrade=upgrade_from is not None,
        revision=2 if upgrade_from is not None else 1,
        kube_version=kube,
        api_versions=apis,
    )
    release = load_release(target, new_opts, include_crds=upgrade_from is None)
    for note in release.notes:
        err_console.print(f"warning: {note}", markup=False)
    if release.from_chart:
        text = lookup.note(
            target, f"{release.chart_name}@{release.chart_version}", [p for p, _ in release.files], values=new_opts.values
        )
        if text is not None:
            err_console.print(f"warning: {text}", markup=False)
    hr = postrender.helmrelease_for_chart(helmrelease or [], target)
    parsed = _parse(release, hr, namespace, kube)
    chart = f"{release.chart_name}@{release.chart_version}" if release.from_chart else ""
    previous_crds: list[dict[str, Any]] = []
    if upgrade_from is None:
        plan = plan_install(parsed.resources, release.parse_crds().resources)
    else:
        old_opts = rendering.RenderOptions(
            release_name=release_name,
            namespace=namespace,
            values=rendering.load_values(upgrade_from_values or [], upgrade_from_set or []),
            values_files=tuple(upgrade_from_values or ()),
            kube_version=kube,
        api_versions=apis,
        )
        previous = _parse(load_release(upgrade_from, old_opts), hr, namespace, kube)
        previous_crds = [r.body for r in previous.resources if r.kind == "CustomResourceDefinition" and not r.is_hook]
        plan = plan_upgrade(
            previous.resources, parsed.resources, server_side=server_side, kube_version=kube
        )
    ctx = plan_report.PlanContext(
        release_name=release_name,
        namespace=namespace,
        chart=chart,
        dropped=tuple(parsed.dropped),
        build_error=_build_error(plan, profile, kube, api_versions, previous_crds),
    )
    if fmt is PlanFormat.json:
        emit(plan_report.to_json(plan, ctx), output)
    elif output and output != "-":
        buf = io.StringIO()
        plan_report.render_text(plan, ctx, text_console(buf))
        emit(buf.getvalue(), output)
    else:
        plan_report.render_text(plan, ctx, console)
    if plan.errors or ctx.build_error is not None:
        raise typer.Exit(1)  # Helm would fail: the upgrade (or install) does not happen


def _parse(release: ReleaseInput, hr: HelmRelease | None, namespace: str, kube: str | None) -> ParseResult:
    """The release's objects, post-rendered as helm-controller does when a HelmRelease is given
    (a post-render failure is Helm's error, bad input here: exit 2)."""
    if hr is None:
        return release.parse(namespace)
    try:
        objects = postrender.post_render(hr, release.files, kube_version=kube or DEFAULT_KUBE_VERSION)
    except postrender.PostRenderError as err:
        raise InputError(f"HelmRelease {hr.ref}: {err}", file=hr.source or None) from None
    return parse_objects(objects, namespace=namespace)


def _build_error(
    plan: Plan, profile: str | None, kube: str | None, extra: list[str] | None, installed_crds: list[dict[str, Any]]
) -> str | None:
    """Helm's Build of the manifest against the cluster the profile describes (crds/ and the
    previous release's CRDs taken as established); None without a profile or Kubernetes version."""
    if profile is None and kube is None:
        return None
    api_versions = list(extra or ())
    if profile is not None:
        from helmsim.cluster.profile import load_profile

        prof = load_profile(profile)
        kube = kube or prof.kubernetes_version
        api_versions = prof.helm_api_versions() + api_versions
    assert kube is not None
    crds = [r.body for r in plan.crds] + installed_crds
    err = build.build_error([s.resource for s in plan.steps], build.cluster_mapper(kube, api_versions, crds))
    if err is None or plan.action == "upgrade":
        return err  # upgrade.go validateManifest returns the Build error unwrapped
    return build.INSTALL.format(err)
