"""A chart that renders no workload with its default values (bitnami gitlab-runner without
gitlabUrl and a token, bitnami mastodon without a domain) is Ready at once; the report says that
Ready only means its objects were accepted."""

from __future__ import annotations

from realcharts_helpers import simulate_chart

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
