"""JUnit XML output of a check: a test suite per profile, a test case per release × profile.

A case fails when a finding at or above ``--fail-on`` holds for that release under that
profile (``<failure type="HS103" message=…>`` with the chain in the body); lower findings go to
``<system-out>``; releases not simulated (no local chart) and without findings are skipped, and
so is a release Blocked by another's failure (``<skipped message="blocked by …">``): one failure
per root cause per profile. Each suite's ``<properties>`` name the config file in effect
(``helmsim.config``: its path, or ``no config file``); with ``--runs`` also
``helmsim.monteCarlo.runs``/``.seed`` and
``helmsim.monteCarlo.<release>.<outcome>`` = ``count/runs p % [lo, hi]``, and each case's
``<system-out>`` the release's sampled outcome distribution under that profile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from helmsim.config import config_name
from helmsim.diagnose.check import CheckReport
from helmsim.diagnose.model import Finding, Occurrence, Severity
from helmsim.diagnose.sampling import stat_text
from helmsim.report.safe import safe_xml

if TYPE_CHECKING:
    from helmsim.fleet.run import FleetReport


def _properties(suite: ET.Element, report: CheckReport, profile: str) -> None:
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="helmsim.config", value=config_name(report.config))
    sampling = report.sampling
    if sampling is None:
        return
    ET.SubElement(props, "property", name="helmsim.monteCarlo.runs", value=str(sampling.runs))
    ET.SubElement(props, "property", name="helmsim.monteCarlo.seed", value=str(sampling.seed))
    for d in sampling.distributions:
        if d.profile != profile:
            continue
        for s in d.outcomes:
            ET.SubElement(
                props,
                "property",
                name=f"helmsim.monteCarlo.{d.release}.{s.label}",
                value=stat_text(s),
            )


def to_xml(report: CheckReport, *, fail_on: str) -> str:
    """A test suite per profile, a test case per release × profile."""
    suites = ET.Element("testsuites", name="helmsim check")
    for profile in report.profiles:
        _suite(suites, report, profile, fail_on, profile)
    return _finish(suites)


def fleet_to_xml(fleet: FleetReport, *, fail_on: str) -> str:
    """A test suite per rehearsal × profile (``NAME [values] / PROFILE``)."""
    suites = ET.Element("testsuites", name="helmsim fleet")
    for spec, report in fleet.rehearsals:
        for profile in report.profiles:
            _suite(suites, report, profile, fail_on, f"{spec.key} / {profile}")
    return _finish(suites)


def _finish(suites: ET.Element) -> str:
    for attr in ("tests", "failures", "skipped"):
        suites.set(attr, str(sum(int(s.get(attr, "0")) for s in suites)))
    suites.set("errors", "0")
    order = ("name", "tests", "failures", "errors", "skipped")
    suites.attrib = {k: suites.attrib[k] for k in order}
    ET.indent(suites)
    safe_xml(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )


def _blocks(dependents: list[Finding]) -> str:
    """The body's last line for a root cause that blocks other releases (their cases skip)."""
    if not dependents:
        return ""
    names = ", ".join(sorted(d.release for d in dependents))
    return f"\nblocks: {names} (dependsOn it, {dependents[0].rule})"


def _blocking_cause(
    report: CheckReport, finding: Finding, profile: str, floor: Severity | None
) -> Finding | None:
    """The root cause a blocked dependent's finding is listed under, when that cause fails its
    own case under ``profile``."""
    cause = report.cause_of(finding)
    if cause is None or floor is None:
        return None
    occ = next((o for o in cause.occurrences if o.profile == profile), None)
    return cause if occ is not None and occ.severity >= floor else None


def _suite(
    suites: ET.Element, report: CheckReport, profile: str, fail_on: str, name: str
) -> None:
    floor = None if fail_on == "never" else Severity.parse(fail_on)
    suite = ET.SubElement(suites, "testsuite", name=name)
    _properties(suite, report, profile)
    tests = failures = skipped = 0
    for ref in sorted(report.releases):
        o = report.outcomes.get((ref, profile))
        if o is None:
            continue
        tests += 1
        case = ET.SubElement(
            suite,
            "testcase",
            classname=ref,
            name=f"{ref} [{profile}]",
            time=f"{(o.ready_at or 0.0):.3f}",
        )
        found = report.findings_for(ref, profile)
        failing: list[tuple[Finding, Occurrence]] = []
        other: list[tuple[Finding, Occurrence]] = []
        for f in found:
            occ = next(x for x in f.occurrences if x.profile == profile)
            (failing if floor is not None and occ.severity >= floor else other).append((f, occ))
        causes = [_blocking_cause(report, f, profile, floor) for f, _ in failing]
        if failing and all(causes):
            # Blocked by a failure reported in its own case: one failure per root cause
            skipped += 1
            names = sorted({f"{c.release} ({c.rule} {c.slug})" for c in causes if c is not None})
            ET.SubElement(case, "skipped", message=f"blocked by {', '.join(names)}")
            other = failing + other
        elif failing:
            failures += 1
            f, occ = failing[0]
            blocked = {id(root): deps for root, deps in report.root_causes()}
            body = "\n\n".join(
                f"{ff.rule} {ff.slug} ({oo.severity.name}) {ff.location.obj} ({ff.location.file}:{ff.location.line})\n"
                f"{oo.message}\n" + "\n".join(f"  {s}" for s in oo.chain) + _blocks(blocked.get(id(ff), []))
                for ff, oo in failing
            )
            el = ET.SubElement(
                case, "failure", message=f"{f.rule} {f.slug}: {occ.message}", type=f.rule
            )
            el.text = body
        elif not o.simulated and not found:
            skipped += 1
            ET.SubElement(
                case, "skipped", message="not simulated: no local chart for this HelmRelease"
            )
        out = [f"outcome: {o.outcome} ({o.reason}) {o.message}".rstrip()]
        out += [f"{ff.rule} {ff.slug} ({oo.severity.name}): {oo.message}" for ff, oo in other]
        dist = report.sampling.distribution(ref, profile) if report.sampling else None
        if dist is not None:
            out.append(
                f"sampled ({dist.runs} runs): "
                + "; ".join(
                    f"{s.label} {stat_text(s)}"
                    + (f" seed {s.seed}" if s.seed is not None and s.count else "")
                    for s in dist.outcomes
                )
            )
        ET.SubElement(case, "system-out").text = "\n".join(out)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
