"""The HTML rollout timeline (issue 9) without a browser: what the file says about the seeds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from html_runs import DATA, FAILS_VALUES, RACE_PROFILE, SEED1, SEED2, run
from html_dom import lane, parse
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile
from helmsim.report.html import ChainStep, Finding, OutcomeDistribution, render_html
from helmsim.simulate import simulate

JOB = "Job/kagent/agent-platform-connectivity-agent-manager-migrate"
CNP = "CiliumNetworkPolicy/kagent/agent-platform-connectivity-agent-manager-migrate"


def _start(span_attrs: dict[str, str]) -> float:
    return float(span_attrs["data-start"])


# --- seed 1: the race ----------------------------------------------------------------------------
def test_race_job_lane_comes_before_its_policy_and_the_policy_takes_effect_after_the_pod_started(race) -> None:
    doc = parse(render_html(race))
    job_i, _ = lane(doc, "Job", JOB)
    pod_i, pod = lane(doc, "Pod", "migrate")
    cnp_i, cnp = lane(doc, "CiliumNetworkPolicy", CNP)
    # Helm applies the Job's kind group before the CiliumNetworkPolicy's (unknown kinds last)
    assert job_i < pod_i < cnp_i
    # labelled per Job: the Job's name without the release prefix, the pod's number of all
    assert pod.attrs["data-depth"] == "1" and "agent-manager-migrate-b49599d7 pod 1/1" in pod.label
    running = next(s for s in pod.spans if s.attrs["data-state"] == "Running")
    in_effect = next(s for s in cnp.spans if s.attrs["data-state"] == "in effect")
    not_yet = next(s for s in cnp.spans if s.attrs["data-style"] == "pending")
    assert _start(not_yet.attrs) < _start(running.attrs) < _start(in_effect.attrs)
    # the pod's lane says which policy its containers need and draws when it took effect
    text = render_html(race)
    assert f'href="#{cnp.attrs["id"]}">needs CiliumNetworkPolicy (in effect t=1.13s)</a>' in text
    line = next(e for e in doc.elements if "needs-line" in e.classes)
    assert line.attrs["data-policy"] == cnp.obj and float(line.attrs["data-t"]) == _start(in_effect.attrs)


def test_race_denied_connection_is_a_span_and_a_marker_readable_without_colour(race) -> None:
    doc = parse(render_html(race))
    _, pod = lane(doc, "Pod", "migrate")
    denied = [s for s in pod.spans if s.attrs["data-style"] == "denied"]
    assert len(denied) == 1
    span = denied[0]
    assert "band-overlay" in span.classes and "st-denied" in span.classes
    assert span.text.startswith("⊘ denied ×1: kube-apiserver")  # a glyph and a word, not just red
    # it lasts until the retried SYN gets through once the policy is in effect
    connected = race.trace.find(what="connected", obj=pod.obj)[0]
    assert float(span.attrs["data-end"]) == pytest.approx(connected.time, abs=1e-3)
    marker = next(m for m in pod.markers if m.attrs["data-what"] == "connect-denied")
    assert "sev-deny" in marker.classes and marker.text == "⊘"
    assert marker.attrs["aria-label"].startswith(f"t={_fmt(float(marker.attrs['data-t']))}s denied connect-denied:")
    assert "SYN 1 to kube-apiserver (10.96.0.1:443) dropped" in marker.attrs["data-msg"]


def _fmt(t: float) -> str:
    return f"{t:.3f}".rstrip("0").rstrip(".")


def test_race_verdict_and_lanes_for_helm_controller_helm_kind_groups_and_the_wait(race) -> None:
    doc = parse(render_html(race))
    roles = [ln.attrs["class"].split()[1] for ln in doc.lanes[:4]]
    assert roles == ["role-helmrelease", "role-helm", "role-groups", "role-wait"]
    hr = doc.lanes[0]
    verdict = next(m for m in hr.markers if m.attrs["data-what"] == "verdict")
    assert verdict.attrs["data-t"] == "10.080" and "Verdict: Ready" in verdict.attrs["data-msg"]
    groups = doc.lanes[2]
    kinds = [s.attrs["data-state"] for s in groups.spans]
    assert kinds.index("Job ×1") < kinds.index("CiliumNetworkPolicy ×1")
    wait = doc.lanes[3]
    assert [s.attrs["data-state"] for s in wait.spans] == ["all ready"]
    assert all(m.attrs["data-what"] in ("wait-start", "poll", "wait-end") for m in wait.markers)
    text = "".join(e.text for e in doc.elements if "verdict" in e.classes and e.tag == "div")
    assert "Verdict at t=10.08s: Ready" in text


# --- seed 1: the failure -------------------------------------------------------------------------
def test_failing_migrate_job_shows_three_failed_attempts_and_a_failed_wait() -> None:
    result = run("seed1-migrate-race", "cilium-always", str(FAILS_VALUES))
    doc = parse(render_html(result))
    pods = [ln for ln in doc.lanes if ln.attrs["data-kind"] == "Pod" and "migrate" in ln.obj]
    assert len(pods) >= 3
    numbers = [re.search(r"-migrate-[0-9a-f]+ pod (\d+)/(\d+)", p.label).groups() for p in pods]  # type: ignore[union-attr]
    assert [k for k, _ in numbers[:3]] == ["1", "2", "3"] and {n for _, n in numbers} == {str(len(pods))}
    for pod in pods[:3]:
        failed = [s for s in pod.spans if s.attrs["data-style"] == "failed"]
        assert failed and "st-failed" in failed[0].classes and failed[0].text.startswith("✕ Failed")
        exited = next(m for m in pod.markers if m.attrs["data-what"] == "container-exited")
        assert "sev-fail" in exited.classes and "exited with code 1" in exited.attrs["data-msg"]
    wait = next(ln for ln in doc.lanes if "role-wait" in ln.attrs["class"])
    first = wait.spans[0]
    assert (first.attrs["data-state"], first.attrs["data-style"]) == ("failed", "failed")
    end = next(m for m in wait.markers if "failed early due to stalled resources: [Job/kagent/" in m.attrs["data-msg"])
    assert "sev-fail" in end.classes
    outcome = next(o for o in result.releases if o.simulated)
    verdict = next(m for m in doc.lanes[0].markers if m.attrs["data-what"] == "verdict")
    assert f"Verdict: {outcome.outcome}" in verdict.attrs["data-msg"] and outcome.outcome != "Ready"


# --- seed 2: the claim that never binds ----------------------------------------------------------
def test_seed2_claim_stays_pending_and_five_install_attempts_time_out(sim) -> None:
    result = sim("seed2-hf-cache", "kind")
    doc = parse(render_html(result))
    _, claim = lane(doc, "PersistentVolumeClaim", "hf-cache")
    assert {style for _, style in claim.span_states() if _ != "Terminating"} == {"pending"}
    assert not any(state == "Bound" for state, _ in claim.span_states())
    wffc = next(m for m in claim.markers if "WaitForFirstConsumer" in m.attrs["data-msg"])
    assert re.search(r"\(×\d+, until t=[\d.]+s\)", wffc.attrs["data-msg"])  # repeats folded into one marker
    helm = doc.lanes[1]
    assert [s.attrs["data-state"] for s in helm.spans if s.attrs["data-state"].startswith("install")] == [
        "install → failed"
    ] * 5
    wait = doc.lanes[3]
    assert [s.attrs["data-state"] for s in wait.spans] == ["timeout"] * 5
    hr = doc.lanes[0]
    assert hr.spans[-1].attrs["data-state"] == "Stalled: RetriesExceeded"
    assert "Verdict: Stalled" in next(m for m in hr.markers if m.attrs["data-what"] == "verdict").attrs["data-msg"]


# --- file properties -----------------------------------------------------------------------------
def test_same_inputs_give_byte_identical_html(race) -> None:
    again = run.__wrapped__("seed1-migrate-race", str(RACE_PROFILE))  # a fresh simulation
    assert render_html(race) == render_html(again)


def test_html_does_not_depend_on_the_python_hash_seed(tmp_path: Path) -> None:
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"{seed}.html"
        subprocess.run(
            [sys.executable, "-m", "helmsim", "simulate", *SEED1_ARGS, "--profile", "cilium-always", "--format", "html", "-o", str(out)],
            env={**os.environ, "PYTHONHASHSEED": seed}, check=True, capture_output=True,
        )
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_the_file_is_self_contained(race) -> None:
    text = render_html(race)
    assert text.startswith("<!DOCTYPE html>") and "<style>" in text and "<script>" in text
    assert "default-src 'none'" in text  # the page may not fetch anything
    assert not re.search(r"\b(src|href)\s*=\s*\"(?!#)", text)  # every link is in-page
    assert "url(" not in text and "@import" not in text


def test_secret_data_never_reaches_the_report() -> None:
    chart = DATA / "secret-chart"
    releases = build_inputs(
        str(chart), values=[], sets=[], helmrelease=[], charts=[], release_name="demo", namespace="apps",
        upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    text = render_html(simulate(load_profile("kind"), releases))
    assert "Secret/apps/demo-creds" in text  # the object is on the timeline …
    for secret in ("hs-sentinel-string-data-7731", "hs-sentinel-data-9942", "aHMtc2VudGluZWwtZGF0YS05OTQy"):
        assert secret not in text  # … its data is not


# --- findings and Monte Carlo --------------------------------------------------------------------
def test_findings_link_their_cause_chain_to_markers_and_lanes(race) -> None:
    denied = race.trace.find(what="connect-denied")[0]
    chain = [ev.id for ev in race.trace.chain(denied.id)]
    finding = {
        "title": "Job starts before its <CiliumNetworkPolicy> is in effect",
        "message": "the first SYN is dropped",
        "severity": "warning",
        "profile": race.profile,
        "release": "agent-platform/agent-platform-connectivity",
        "chain": chain,
        "objects": [denied.obj, CNP + "-nope", _ref(race, "CiliumNetworkPolicy")],
    }
    text = render_html(race, findings=[finding])
    doc = parse(text)
    assert "&lt;CiliumNetworkPolicy&gt;" in text and "<CiliumNetworkPolicy>" not in text
    assert 'id="finding-F1"' in text
    chain_links = [h for h in doc.hrefs if h.startswith("#ev-")]
    assert len(chain_links) >= len(chain) - 1 and all(h[1:] in doc.ids for h in doc.hrefs)
    assert "#" + _marker_of(doc, denied.id).attrs["id"] in doc.hrefs
    cited = [ln for ln in doc.lanes if "cited" in ln.attrs["class"]]
    assert {ln.obj for ln in cited} >= {denied.obj, _ref(race, "CiliumNetworkPolicy")}
    assert all("F1" in ln.label for ln in cited)


def test_findings_accept_chain_steps_of_derived_facts(race) -> None:
    denied = race.trace.find(what="connect-denied")[0]
    steps = [{"time": 0.08, "object": CNP, "text": "created"}, ChainStep(denied.time, denied.obj, "first SYN dropped", denied.id)]
    doc = parse(render_html(race, findings=[Finding("race", chain=tuple(ChainStep.coerce(s) for s in steps))]))
    assert "#" + _marker_of(doc, denied.id).attrs["id"] in doc.hrefs
    items = [e.text for e in doc.elements if e.tag == "li" and e.text.startswith("t=")]
    assert items[0].startswith("t=0.08s " + CNP + ": created")


def test_monte_carlo_histogram_sits_next_to_the_matching_timeline(race) -> None:
    dist = OutcomeDistribution(
        release="agent-platform/agent-platform-connectivity",
        profile=race.profile,
        counts={"Stalled": 13, "Ready": 87},
        ready_at=tuple(10.0 + i * 0.1 for i in range(87)),
    )
    other = {"release": "x/y", "profile": "kind", "counts": {"Ready": 3}}
    text = render_html(race, distributions=[dist, other])
    doc = parse(text)
    rows = [e for e in doc.elements if e.tag == "tr" and "data-outcome" in e.attrs]
    assert [(r.attrs["data-outcome"], "".join(r.text.split())) for r in rows] == [
        ("Ready", "✓Ready87(87%)"), ("Stalled", "✕Stalled13(13%)"), ("Ready", "✓Ready3(100%)")
    ]
    side = text.index('class="tl-side"')
    assert text.index('data-release="agent-platform/agent-platform-connectivity" data-profile') > side
    assert text.index("Monte-Carlo outcomes</h2>") > text.index('data-release="x/y"') - 400
    assert text.count("<rect ") == 10 and "median t=14.3s" in text


def _marker_of(doc, event_id: int):
    return next(m for ln in doc.lanes for m in ln.markers if str(event_id) in m.attrs.get("data-ids", "").split())


def _ref(result, kind: str) -> str:
    return next(ev.obj for ev in result.trace if ev.obj.startswith(kind + "/") and ev.actor == "helm")


# --- CLI -----------------------------------------------------------------------------------------
runner = CliRunner()
SEED1_ARGS = [str(SEED1), "--helmrelease", str(SEED1 / "flux")]


def test_cli_writes_the_html_file(tmp_path: Path) -> None:
    out = tmp_path / "t.html"
    result = runner.invoke(app, ["simulate", *SEED1_ARGS, "--profile", str(RACE_PROFILE), "--format", "html", "--output", str(out)])
    assert result.exit_code == 0, result.output
    result = run("seed1-migrate-race", str(RACE_PROFILE))
    verdict = ("PASS 4 Ready of 4 HelmReleases under cilium-always-fastpull (3 not simulated)", False)
    expected = render_html(result, config="config: no config file", verdict=verdict)
    assert out.read_text(encoding="utf-8") == expected


def test_cli_html_to_stdout_with_dash_and_exit_code_1_when_not_ready() -> None:
    result = runner.invoke(app, ["simulate", str(SEED2), "--helmrelease", str(SEED2 / "flux"), "--format", "html", "-o", "-"])
    assert result.exit_code == 1
    assert result.stdout.startswith("<!DOCTYPE html>") and "Verdict: Stalled" in result.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--format html writes a file: add --output FILE"),
        (["--output", "/nonexistent-dir/t.html"], "/nonexistent-dir/t.html: the output directory does not exist"),
    ],
)
def test_cli_html_bad_output_is_one_line_exit_2(extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["simulate", *SEED1_ARGS, "--profile", "cilium-always", "--format", "html", *extra])
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
