"""Render a Helm ``Plan`` as text (Rich) or as the JSON documented in docs/plan.md."""

from __future__ import annotations

from typing import Any

from msgspec import Struct
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from helmsim.helm.plan import Plan, Step
from helmsim.manifests import Resource, Source
from helmsim.report.safe import dump_json


class PlanContext(Struct, frozen=True):
    """Release identity and notes printed with a plan."""

    release_name: str
    namespace: str
    chart: str = ""
    dropped: tuple[tuple[Source, str], ...] = ()
    build_error: str | None = None
    """Helm's Build error against the profile's APIs (helmsim.helm.build), when it fails."""


def _obj(res: Resource) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": res.api_version,
        "kind": res.kind,
        "namespace": res.namespace,
        "name": res.name,
        "source": {"path": res.source.path, "index": res.source.index, "line": res.source.line},
    }
    if res.hook is not None:
        out["hook"] = {
            "events": list(res.hook.events),
            "weight": res.hook.weight,
            "deletePolicies": list(res.hook.delete_policies) or ["before-hook-creation"],
        }
    return out


def _step(step: Step) -> dict[str, Any]:
    return {**_obj(step.resource), "action": step.action, "errors": list(step.errors)}


def to_json(plan: Plan, ctx: PlanContext) -> str:
    """The plan as stable, indented JSON (schema in docs/plan.md)."""
    doc = {
        "action": plan.action,
        "release": {"name": ctx.release_name, "namespace": ctx.namespace, "chart": ctx.chart},
        "crds": [_obj(r) for r in plan.crds],
        "preHooks": {"event": plan.pre_event, "hooks": [_obj(r) for r in plan.pre_hooks]},
        "groups": [
            {"kind": kind, "objects": [_step(s) for s in steps]} for kind, steps in plan.groups
        ],
        "wait": {"objects": [r.ref for r in plan.waited]},
        "postHooks": {"event": plan.post_event, "hooks": [_obj(r) for r in plan.post_hooks]},
        "deletes": [_step(s) for s in plan.deletes],
        "deletesSkipped": plan.deletes_skipped,
        "errors": list(plan.errors),
        "buildError": ctx.build_error,
        "dropped": [
            {"path": src.path, "index": src.index, "line": src.line, "hook": hook}
            for src, hook in ctx.dropped
        ],
    }
    return dump_json(doc)


def _hook_table(hooks: tuple[Resource, ...]) -> Table:
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    for col in ("#", "WEIGHT", "KIND", "OBJECT", "DELETE POLICY", "SOURCE"):
        table.add_column(col, overflow="fold")
    for i, r in enumerate(hooks, 1):
        assert r.hook is not None
        policies = ",".join(r.hook.delete_policies) or "before-hook-creation (default)"
        table.add_row(str(i), str(r.hook.weight), r.kind, _name(r), policies, _src(r))
    return table


def _src(r: Resource) -> str:
    """Template path without the chart-name prefix Helm gives it, plus the line."""
    path = r.source.path
    if "/templates/" in path or "/crds/" in path:
        path = path.split("/", 1)[1]
    return f"{path}:{r.source.line}"


def _name(r: Resource) -> str:
    return f"{r.namespace}/{r.name}" if r.namespace else r.name


def render_text(plan: Plan, ctx: PlanContext, console: Console) -> None:
    """Print the plan as numbered phases, the manifest kind group by kind group."""
    chart = f" (chart {ctx.chart})" if ctx.chart else ""
    console.print(
        Text(f"{plan.action.capitalize()} plan for release {ctx.namespace}/{ctx.release_name}{chart}", style="bold")
    )
    if ctx.build_error is not None:
        # helm/helm pkg/action/install.go, upgrade.go: Build fails before anything below happens
        console.print(Text(f"Helm's Build fails, so nothing below happens: {ctx.build_error}", style="red"))
    phase = 0

    def heading(title: str) -> None:
        nonlocal phase
        phase += 1
        console.print()
        console.print(Text(f"{phase}. {title}", style="bold"))

    if plan.action == "install":
        heading("crds/ (created one file at a time before anything else; never upgraded)")
        if plan.crds:
            for r in plan.crds:
                console.print(f"   {r.kind} {r.name}  [{r.source}]", markup=False)
        else:
            console.print("   (none)")
    heading(f"{plan.pre_event} hooks (one at a time, each waited on until ready)")
    console.print(_hook_table(plan.pre_hooks) if plan.pre_hooks else "   (none)")
    heading(
        "manifest, kind group by kind group — Helm waits only for the API calls of a group, "
        "never for readiness, before the next"
    )
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("#", "GROUP", "KIND", "OBJECT", "ACTION", "SOURCE"):
        table.add_column(col, overflow="fold")
    n = 0
    for g, (kind, steps) in enumerate(plan.groups, 1):
        for s in steps:
            n += 1
            action = s.action if not s.errors else f"{s.action} (fails)"
            table.add_row(str(n), str(g), kind, _name(s.resource), action, _src(s.resource))
    console.print(table if n else "   (none)")
    for s in plan.steps:
        for err in s.errors:
            console.print(Text(f"   error: {err}", style="red"))
    if plan.action == "upgrade":
        heading("objects removed from the chart")
        if not plan.deletes:
            console.print("   (none)")
        for s in plan.deletes:
            verb = "kept (helm.sh/resource-policy: keep), orphaned" if s.action == "kept" else "delete"
            if s.action == "delete" and plan.deletes_skipped:
                verb = "NOT deleted: Helm skips deletes when an update failed"
            console.print(f"   {s.resource.ref}: {verb}", markup=False)
    heading(f"wait (the release manifest only; hooks are never waited on here): {len(plan.waited)} objects")
    heading(f"{plan.post_event} hooks (one at a time, each waited on until ready)")
    console.print(_hook_table(plan.post_hooks) if plan.post_hooks else "   (none)")
    notes = [
        f'skipping unknown hook: "{hook}" ({src}) — Helm drops the whole document'
        for src, hook in ctx.dropped
    ]
    if plan.errors:
        notes.append("the upgrade fails: " + " && ".join(plan.errors))
    if notes:
        console.print()
        console.print(Group(*(Text(f"note: {n}", style="yellow") for n in notes)))
