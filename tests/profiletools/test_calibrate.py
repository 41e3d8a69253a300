"""`helmsim profiles calibrate`: latencies fitted from a recorded afternoon of a kind cluster."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiletools_helpers import DATA, ROOT, runner

from helmsim.cli import app
from helmsim.cluster.latency import Empirical, parse_duration
from helmsim.cluster.profile import load_profile
from helmsim.errors import InputError
from helmsim.profiletools.calibrate import calibrate, thin
from helmsim.profiletools.dumps import Dump, add_text

EVENTS = DATA / "events"
SLOW = ROOT / "examples" / "scenarios" / "profiles" / "cilium-always-slow-policy.yaml"


def _calibrate(tmp_path: Path, *args: str, base: str = "kind") -> tuple[Path, str]:
    out = tmp_path / "calibrated.yaml"
    result = runner.invoke(app, ["profiles", "calibrate", *args, "-p", base, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out, result.stderr


def _events() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((EVENTS / "events.json").read_text())["items"]
    return items


def _when(event: dict[str, Any]) -> float:
    from helmsim.kstatus.core import parse_rfc3339

    text = event["eventTime"] or event["firstTimestamp"]
    at = parse_rfc3339(text)
    assert at is not None
    return at.timestamp()


# --- medians match the events' own figures ------------------------------------------------------


def test_image_pull_median_is_the_kubelets_own_median(tmp_path: Path) -> None:
    out, _ = _calibrate(tmp_path, str(EVENTS))
    figures = []
    for e in _events():
        m = re.search(r" in ((?:[0-9.]+[a-zµ]+)+)(?: \(([^ ]+) including waiting\))?", e["message"])
        if e["reason"] == "Pulled" and m:
            figures.append(parse_duration(m.group(2) or m.group(1)))
    assert len(figures) == 12
    pull = load_profile(str(out)).latencies.image_pull
    assert isinstance(pull, Empirical)
    assert sorted(pull.samples) == sorted(figures)  # "1m2.5s", "850ms", combined events included
    assert pull.nominal() == statistics.median(figures) == 3.3


def test_provisioning_and_propagation_medians_match_the_timestamps(tmp_path: Path) -> None:
    out, _ = _calibrate(tmp_path, str(EVENTS))
    profile = load_profile(str(out))
    started: dict[str, float] = {}
    failed: set[str] = set()
    durations = []
    for e in _events():
        uid = e["involvedObject"]["uid"]
        if e["reason"] == "Provisioning":
            started[uid] = _when(e)
        elif e["reason"] == "ProvisioningFailed":
            failed.add(uid)
        elif e["reason"] == "ProvisioningSucceeded" and uid not in failed:
            durations.append(_when(e) - started[uid])
    prov = profile.latencies.volume_provisioning
    assert isinstance(prov, Empirical)
    assert statistics.median(prov.samples) == statistics.median(durations) == 3
    # whole-second timestamps: deterministic runs use the mean, which truncation leaves unbiased
    assert prov.nominal() == pytest.approx(statistics.fmean(durations), abs=1e-3)

    cnps = json.loads((EVENTS / "cnps.json").read_text())["items"]
    from helmsim.kstatus.core import parse_rfc3339

    delays = []
    for c in cnps:
        created = parse_rfc3339(c["metadata"]["creationTimestamp"])
        done = parse_rfc3339(c["status"]["nodes"]["kind-control-plane"]["lastUpdated"])
        assert created and done
        delays.append((done - created).total_seconds() - 0.5)  # creation is truncated to the second
    prop = profile.cni.policy_propagation_seconds
    assert isinstance(prop, Empirical)
    assert prop.nominal() == pytest.approx(statistics.median(delays))


def test_comments_give_sample_size_and_time_window(tmp_path: Path) -> None:
    text = _calibrate(tmp_path, str(EVENTS))[0].read_text()
    line = next(ln for ln in text.splitlines() if ln.lstrip().startswith("imagePull:"))
    assert "calibrated: 12 samples from the kubelet's Pulled events" in line
    assert "window 2026-01-05T14:00:04Z .. 2026-01-05T14:33:04Z" in line
    assert "median 3.3s" in line


def test_too_few_samples_keep_the_prior_and_say_so(tmp_path: Path) -> None:
    out, stderr = _calibrate(tmp_path, str(EVENTS))
    data = yaml.safe_load(out.read_text())
    assert "volumeAttach" not in data["latencies"]
    assert "# volumeAttach: kept the prior: 3 samples" in out.read_text()
    assert "fewer than --min-samples 10" in out.read_text()
    assert "latencies.volumeAttach: 3 samples, kept the prior" in stderr
    assert (
        load_profile(str(out)).latencies.volume_attach
        == load_profile("kind").latencies.volume_attach
    )
    # a lower threshold calibrates it
    out, _ = _calibrate(tmp_path, str(EVENTS), "--min-samples", "3")
    assert "volumeAttach" in yaml.safe_load(out.read_text())["latencies"]


def test_calibrated_profile_extends_the_prior(tmp_path: Path) -> None:
    out, _ = _calibrate(tmp_path, str(EVENTS), base=str(SLOW))
    data = yaml.safe_load(out.read_text())
    assert (out.parent / data["extends"]).resolve() == SLOW
    profile = load_profile(str(out))
    assert profile.cni.policy_enforcement_mode == "always"  # from the base
    assert profile.sources[-1] == str(out)


def test_thinning_keeps_the_distribution(tmp_path: Path) -> None:
    assert thin([5.0, 1.0, 3.0, 2.0, 4.0], 3) == [1.0, 3.0, 5.0]
    out, _ = _calibrate(tmp_path, str(EVENTS), "--max-samples", "5")
    pull = load_profile(str(out)).latencies.image_pull
    assert isinstance(pull, Empirical) and len(pull.samples) == 5
    assert min(pull.samples) == 0.85 and max(pull.samples) == 62.5
    assert "thinned to 5 quantiles" in out.read_text()


def test_calibration_is_deterministic(tmp_path: Path) -> None:
    first = runner.invoke(app, ["profiles", "calibrate", str(EVENTS)])
    second = runner.invoke(app, ["profiles", "calibrate", str(EVENTS)])
    assert first.exit_code == 0 and first.stdout == second.stdout


# --- the calibrated profile changes Monte-Carlo probabilities ------------------------------------


def _runs(profile: str) -> dict[str, int]:
    result = runner.invoke(
        app,
        [
            "simulate",
            str(ROOT / "tests/fixtures/rules/HS101/failing"),
            "-p",
            profile,
            "--runs",
            "30",
            "--seed",
            "1",
            "--format",
            "json",
        ],
    )
    assert result.exit_code in (0, 1), result.output
    return {s["label"]: s["count"] for s in json.loads(result.stdout)["stats"]}


def test_measured_fast_propagation_makes_the_race_rare(tmp_path: Path) -> None:
    """The illustrative heavy-tailed propagation predicts the Job's first pod is often denied and
    sometimes fails the release; this cluster's own CiliumNetworkPolicy statuses show policies
    enforced within 4 s, so calibrated runs see the race far less and never fail."""
    out, _ = _calibrate(tmp_path, str(EVENTS), base=str(SLOW))
    prior = _runs(str(SLOW))
    calibrated = _runs(str(out))
    denied = "first attempt denied (a connection of its first pod dropped)"
    assert prior["first attempt failed"] > 0 and prior[denied] >= 5
    assert calibrated.get("first attempt failed", 0) == 0
    assert calibrated.get(denied, 0) < prior[denied] / 2


# --- bad input ----------------------------------------------------------------------------------


def test_inputs_without_events_are_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["profiles", "calibrate", str(DATA / "kind" / "nodes.yaml")])
    assert result.exit_code == 2
    assert "no Event, Pod or CiliumNetworkPolicy in the inputs" in result.stderr


def test_malformed_events_file_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "events.json"
    bad.write_text('{"kind": "List", "items": [{"kind": "Event", "involvedObject": "pod/x"}]}')
    result = runner.invoke(app, ["profiles", "calibrate", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {bad}:1: an Event's involvedObject is not a mapping"


_event_values = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=30),
    st.sampled_from(
        [
            "2026-01-05T14:00:04Z",
            "2026-01-05T14:00:04.123456Z",
            "not a time",
            "Pulled",
            "Started",
            "Provisioning",
            "ProvisioningSucceeded",
            "SuccessfulAttachVolume",
            "Scheduled",
            "Pod",
            'Successfully pulled image "a" in 3.2s (3.4s including waiting)',
            "spec.containers{a}",
            'AttachVolume.Attach succeeded for volume "pvc-1"',
            "PersistentVolumeClaim",
        ]
    ),
)


@st.composite
def _event(draw: st.DrawFn) -> dict[str, Any]:
    keys = ["reason", "message", "eventTime", "firstTimestamp", "lastTimestamp", "note", "count"]
    event: dict[str, Any] = {
        k: draw(_event_values) for k in draw(st.lists(st.sampled_from(keys), max_size=6))
    }
    event["kind"] = "Event"
    event["involvedObject"] = draw(
        st.one_of(
            st.dictionaries(
                st.sampled_from(["kind", "uid", "name", "namespace", "fieldPath"]), _event_values
            ),
            _event_values,
        )
    )
    return event


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event(), max_size=12))
def test_any_events_calibrate_or_fail_with_one_input_error(events: list[dict[str, Any]]) -> None:
    dump = Dump()
    try:
        add_text(dump, json.dumps({"kind": "List", "items": events}), "events.json")
        fitted = calibrate(dump, min_samples=1)
    except InputError as err:
        assert str(err).startswith("events.json") and "\n" not in str(err)
        return
    for f in fitted:
        if f.value is not None:
            assert all(s >= 0 for s in f.value["samples"])
