"""A chart that renders no workload with its default values (bitnami gitlab-runner without
gitlabUrl and a token, bitnami mastodon without a domain) is Ready at once; the report says that
Ready only means its objects were accepted."""

from __future__ import annotations

from realcharts_helpers import check_chart, simulate_chart

NOTE = "renders no workload with these values"


def test_a_release_without_workloads_says_so() -> None:
    result = simulate_chart("no-workload")
    assert result.releases[0].outcome == "Ready"
    (note,) = [n for n in result.notes if NOTE in n]
    assert note == (
        "HelmRelease default/no-workload: chart no-workload@0.1.0 renders no workload with these values (no Pod, "
        "Deployment, StatefulSet, DaemonSet, Job or CronJob, hooks included): Ready says its 2 objects were "
        "accepted, not that an application runs"
    )


def test_a_release_with_its_workload_says_nothing() -> None:
    result = simulate_chart("no-workload", sets=("url=https://gitlab.example.com",))
    assert result.releases[0].outcome == "Ready"
    assert not [n for n in result.notes if NOTE in n]


def test_a_claim_without_its_workload_points_at_the_values_not_at_a_hook() -> None:
    """bitnami kibana's defaults render its PVC and no Deployment: under WaitForFirstConsumer the
    claim never binds and Helm's wait stalls. HS102 offered only to move the claim into a hook;
    the values that render the application come first, and the note says no workload rendered."""
    result = simulate_chart("no-workload", values=("ci/claim-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    (note,) = [n for n in result.notes if NOTE in n]
    assert note.endswith(": it ends Stalled without an application in it (see the values the chart needs to render one)")
    report = check_chart("no-workload", release_name="no-workload", values=("ci/claim-values.yaml",))
    (finding,) = [f for f in report.findings if f.rule == "HS102"]
    assert "with these values the release renders no workload at all" in finding.occurrences[0].message
    assert finding.fixes[0].summary.startswith("set the values under which the chart renders the workload that mounts")
    assert "post-install,post-upgrade hook Job" in finding.fixes[1].summary
