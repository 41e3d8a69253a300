"""SARIF 2.1.0 (OASIS) output of a check: one run, the rules as reportingDescriptors, one result
per finding with its template location, a logical location for the Kubernetes object, a stable
``partialFingerprints`` entry, and the causal chain as a thread flow. With ``--runs`` the
sampled figures ride in property bags: ``runs[0].invocations[0].properties.monteCarlo``
(runs, seed) and ``result.properties.monteCarlo`` (the release's outcome distribution per
profile and, for a race rule, how often the race was denied and failed the release).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import quote
from typing import TYPE_CHECKING, Any

from helmsim import __version__
from helmsim.diagnose.check import CheckReport
from helmsim.diagnose.model import Finding, Severity
from helmsim.diagnose.registry import all_rules
from helmsim.diagnose.sampling import Sampling, stat_dict
from helmsim.report.safe import dump_json

if TYPE_CHECKING:
    from helmsim.fleet.run import FleetReport

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "helmsimFinding/v1"
SRCROOT = "SRCROOT"
DOCS_URL = "https://helmsim.dev/docs/"
_LEVEL = {Severity.error: "error", Severity.warning: "warning", Severity.note: "note"}


def fingerprint(f: Finding, rehearsal: str | None = None) -> str:
    """Stable across runs and line moves: rule, release and object (sha256, hex); in a fleet
    also the rehearsal, since one object can fail under one values file and not another."""
    key = f"{f.rule}|{f.release}|{f.location.obj}"
    return hashlib.sha256((key if rehearsal is None else f"{rehearsal}|{key}").encode()).hexdigest()


def _artifact(path: str, base: Path) -> dict[str, str]:
    """An artifactLocation relative to ``%SRCROOT%`` (``base``, the repository root) when the
    file is inside it, else an absolute ``file:`` URI. A relative path is the current
    directory's, so the report is right whichever directory helmsim ran in (SARIF 2.1.0
    §3.4.4: a relative ``uri`` is resolved against its ``uriBaseId``)."""
    p = Path(path) if path else base
    full = (p if p.is_absolute() else Path.cwd() / p).resolve()
    try:
        rel = full.relative_to(base.resolve())
    except ValueError:
        return {"uri": full.as_uri()}
    return {"uri": quote(rel.as_posix()), "uriBaseId": SRCROOT}


def docs_url() -> str:
    """Where the rule pages (``docs/rules/<ID>.md``) are published: ``HELMSIM_DOCS_URL``, else
    the project's Documentation URL (pyproject ``[project.urls]``)."""
    url = os.environ.get("HELMSIM_DOCS_URL") or DOCS_URL
    return url.rstrip("/") + "/"


def _monte_carlo(f: Finding, sampling: Sampling) -> dict[str, Any]:
    """The finding's sampled figures: outcome distributions of its release, its race figures."""
    out: dict[str, Any] = {"runs": sampling.runs, "seed": sampling.seed}
    out["outcomes"] = [
        {
            "profile": d.profile,
            "outcomes": [{"outcome": s.label, **stat_dict(s)} for s in d.outcomes],
        }
        for p in f.profiles
        if (d := sampling.distribution(f.release, p)) is not None
    ]
    races = sampling.races_of(f.rule, f.release, f.location.obj)
    if races:
        out["races"] = [{"profile": r.profile, **r.figures()} for r in races]
    return out


def _result(
    f: Finding,
    index: dict[str, int],
    base: Path,
    sampling: Sampling | None = None,
    rehearsal: str | None = None,
) -> dict[str, Any]:
    worst = f.worst
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": _LEVEL[f.severity],
        "message": {
            "text": f"{f.message} [{', '.join(f.profiles)}]"
            + ("" if rehearsal is None else f" (rehearsal {rehearsal})")
        },
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact(f.location.file, base),
                    "region": {"startLine": max(1, f.location.line)},
                },
                "logicalLocations": [{"fullyQualifiedName": f.location.obj, "kind": "resource"}],
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(f, rehearsal)},
        "properties": {
            **({} if rehearsal is None else {"rehearsal": rehearsal}),
            "release": f.release,
            "profiles": f.profiles,
            "occurrences": [o.to_dict() for o in f.occurrences],
            "fixes": [fx.to_dict() for fx in f.fixes],
        },
    }
    if sampling is not None:
        result["properties"]["monteCarlo"] = _monte_carlo(f, sampling)
    if worst.chain:
        result["codeFlows"] = [
            {
                "message": {"text": f"causal chain under {worst.profile}"},
                "threadFlows": [
                    {
                        "locations": [
                            {
                                "location": {
                                    "message": {"text": str(s)},
                                    "logicalLocations": [
                                        {"fullyQualifiedName": s.obj, "kind": "resource"}
                                    ],
                                }
                            }
                            for s in worst.chain
                        ]
                    }
                ],
            }
        ]
    if f.suppressed is not None:
        kind = "inSource" if f.suppressed.startswith("helmsim.dev/ignore") else "external"
        result["suppressions"] = [{"kind": kind, "justification": f.suppressed}]
    return result


def to_data(report: CheckReport, *, base: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """The SARIF log as a dict; ``base`` is the directory artifact URIs are relative to."""
    invocation: dict[str, Any] = {"profiles": report.profiles}
    if report.sampling is not None:
        invocation["monteCarlo"] = {"runs": report.sampling.runs, "seed": report.sampling.seed}
    return _log([(None, report)], invocation, Path(base), report.config)


def fleet_to_data(fleet: FleetReport, *, base: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """One SARIF run for the whole matrix: every rehearsal's findings, each naming its
    rehearsal (``properties.rehearsal``, also part of its fingerprint)."""
    invocation: dict[str, Any] = {
        "profiles": fleet.profiles,
        "rehearsals": [spec.key for spec, _ in fleet.rehearsals],
    }
    if fleet.runs:
        invocation["monteCarlo"] = {"runs": fleet.runs, "seed": fleet.seed}
    return _log([(spec.key, r) for spec, r in fleet.rehearsals], invocation, Path(base), fleet.config)


def fleet_to_json(fleet: FleetReport, *, base: str | os.PathLike[str] = ".") -> str:
    return dump_json(fleet_to_data(fleet, base=base))


def _log(
    reports: list[tuple[str | None, CheckReport]],
    invocation: dict[str, Any],
    root: Path,
    config: str | None,
) -> dict[str, Any]:
    rules = all_rules()
    index = {r.id: i for i, r in enumerate(rules)}
    docs = docs_url()
    results = []
    for rehearsal, report in reports:
        findings = sorted([*report.findings, *report.suppressed], key=lambda f: f.sort_key)
        results += [_result(f, index, root, report.sampling, rehearsal) for f in findings]
    # The config in effect: an artifact with SARIF's userSpecifiedConfiguration role (§3.24.6),
    # and by name in the invocation's properties (null: no config file).
    invocation = {**invocation, "configFile": None}
    artifacts: list[dict[str, Any]] = []
    if config:
        where = _artifact(str(Path(config).resolve()), root)
        invocation["configFile"] = where["uri"]
        artifacts.append({"location": where, "roles": ["userSpecifiedConfiguration"]})
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "helmsim",
                        "version": __version__,
                        "rules": [
                            {
                                "id": r.id,
                                "name": r.slug,
                                "shortDescription": {"text": r.summary},
                                "help": {"text": f"{r.summary}. See {r.doc}."},
                                # the rule's page: docs/rules/<ID>.md of this repository, published
                                "helpUri": docs + r.doc.removeprefix("docs/"),
                                "defaultConfiguration": {"level": "error"},
                            }
                            for r in rules
                        ],
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": root.resolve().as_uri() + "/"}},
                "invocations": [{"executionSuccessful": True, "properties": invocation}],
                **({"artifacts": artifacts} if artifacts else {}),
                "results": results,
            }
        ],
    }


def to_json(report: CheckReport, *, base: str | os.PathLike[str] = ".") -> str:
    return dump_json(to_data(report, base=base))
