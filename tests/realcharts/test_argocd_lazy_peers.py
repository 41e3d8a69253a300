"""Argo CD's components reach the repo server, Dex and Redis lazily (argoproj/argo-cd
``reposerver/apiclient/clientset.go`` grpc.NewClient; go-redis; ``util/dex/dex.go``). Their image
was unknown, so helmsim took the application controller to dial the repo server once at start
and exit when refused; the repo server, behind its copyutil init container, was not up yet,
and the StatefulSet's crash loop failed argo-cd's default install early (Stalled). The entry
``argocd-components`` says they do not dial those peers at start."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, restarts, simulate_chart

CHART = "argocd-lazy-peers"


def test_the_controller_does_not_wait_for_the_repo_server() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Ready"
    assert all(v == 0 for v in restarts(result).values())
    notes = behaviour_notes(result, "application-controller")
    assert notes[0].startswith("behaviour from catalog entry argocd-components (")
    assert any(
        n.startswith("environment variable ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER names svc/default/argocd-repo-server:8081, "
                     "which catalog entry argocd-components")
        and n.endswith("does not dial at start: not a need")
        for n in notes
    )
