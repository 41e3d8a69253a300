"""A worker of an unknown image whose environment names a peer that is not Ready yet
(tests/realcharts/README.md: "Programs that cannot work"): helmsim assumes it dials the peer once
at start and exits when refused, so its StatefulSet fails and the install fails early. The report
says the verdict rests on that assumption, and a catalog entry saying it retries changes it."""

from __future__ import annotations

from realcharts_helpers import HERE, simulate_chart

from helmsim.cluster.catalog import parse_catalog_document
from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs
from helmsim.simulate import simulate, with_catalog

RETRIES = """
apiVersion: helmsim.dev/v1alpha1
kind: BehaviourCatalog
entries:
  - name: worker
    summary: the worker retries its Redis every second until it answers
    sources: ["example/worker main.go: redis.Dial in a retry loop"]
    match: {image: ["ghcr.io/example/worker"]}
    needs: ["${env.REDIS_HOST}:${env.REDIS_PORT_NUMBER}"]
    retry: {every: 1s, for: forever, onNeedFailure: retry}
    run: forever
"""


def _releases():
    return build_inputs(str(HERE / "peer-not-ready"), release_name="peer-not-ready", namespace="default")


def test_the_assumed_exit_is_named_as_the_cause_and_as_an_assumption() -> None:
    report = run_check(_releases(), [load_profile("kind")], options=CheckOptions(verify_fixes=False))
    assert [f.rule for f in report.findings] == ["HS116"]  # was a bare HS100
    (finding,) = report.findings
    assert finding.message.startswith(
        "StatefulSet/default/peer-not-ready-worker's container worker needs svc/default/peer-not-ready-redis-master:6379, "
        "which has no ready endpoint yet when it connects (connection refused), and no behaviour is known for its image: "
        "helmsim assumed it connects once at start and exits when refused"
    )
    assert finding.fixes[0].summary.startswith("if worker retries svc/default/peer-not-ready-redis-master:6379 rather than exiting")


def test_a_catalog_entry_that_retries_waits_for_the_peer() -> None:
    entries = parse_catalog_document(RETRIES, ".helmsim.yaml")
    (release,) = simulate(load_profile("kind"), with_catalog(_releases(), entries)).releases
    assert release.outcome == "Ready", release.message


def test_the_note_names_the_peers_it_was_assumed_to_dial() -> None:
    result = simulate_chart("peer-not-ready", "kind")
    assert (
        "no behaviour known for image ghcr.io/example/worker:1: assumed to start and succeed, connecting at start to "
        "svc/default/peer-not-ready-redis-master:6379 and exiting 1 when one does not answer (it runs until stopped)"
    ) in result.notes
