"""JUnit XML output of a check: a test suite per profile, a test case per release × profile.

A case fails when a finding at or above ``--fail-on`` holds for that release under that
profile (``<failure type="HS103" message=…>`` with the chain in the body); lower findings go to
``<system-out>``; releases not simulated (no local chart) and without findings are skipped.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from helmsim.diagnose.check import CheckReport
from helmsim.diagnose.model import Severity


def to_xml(report: CheckReport, *, fail_on: str) -> str:
    floor = None if fail_on == "never" else Severity.parse(fail_on)
    suites = ET.Element("testsuites", name="helmsim check")
    total = failures_total = skipped_total = 0
    for profile in report.profiles:
        suite = ET.SubElement(suites, "testsuite", name=profile)
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
            failing = []
            other = []
            for f in found:
                occ = next(x for x in f.occurrences if x.profile == profile)
                (failing if floor is not None and occ.severity >= floor else other).append((f, occ))
            if failing:
                failures += 1
                f, occ = failing[0]
                body = "\n\n".join(
                    f"{ff.rule} {ff.slug} ({oo.severity.name}) {ff.location.obj} ({ff.location.file}:{ff.location.line})\n"
                    f"{oo.message}\n" + "\n".join(f"  {s}" for s in oo.chain)
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
            ET.SubElement(case, "system-out").text = "\n".join(out)
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", str(skipped))
        total += tests
        failures_total += failures
        skipped_total += skipped
    suites.set("tests", str(total))
    suites.set("failures", str(failures_total))
    suites.set("errors", "0")
    suites.set("skipped", str(skipped_total))
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )
