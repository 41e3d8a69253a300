"""A pre-install hook whose program creates the Secret the release's pods read
(tests/realcharts/README.md: secret-from-hook; argo-cd's redis-secret-init)."""

from __future__ import annotations

from realcharts_helpers import HERE, simulate_chart

from helmsim.cluster.profile import load_profile
from helmsim.release_inputs import build_inputs
from helmsim.simulate import simulate


def test_the_hook_creates_the_secret_the_pods_read() -> None:
    result = simulate_chart("secret-from-hook")
    release = result.releases[0]
    # helm/helm pkg/action/hooks.go: the pre-install Job completes before the Deployment is
    # created; argo-cd cmd/argocd/commands/admin/redis_initial_password.go created argocd-redis
    assert release.outcome == "Ready"
    assert result.sim is not None
    secret = result.sim.store.get("Secret", "default", "argocd-redis")
    assert secret is not None and "auth" in (secret.get("data") or {})
    # the catalog knows the program: nothing about it is assumed
    assert not any("quay.io/argoproj/argocd" in n for n in result.notes)


def test_without_the_hook_the_pods_wait_for_the_secret() -> None:
    releases = build_inputs(
        str(HERE / "secret-from-hook"), values=[], sets=["redisSecretInit.enabled=false"], helmrelease=[], charts=[],
        release_name=None, namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    result = simulate(load_profile("kind"), releases, horizon=900.0)
    release = result.releases[0]
    # kubelet pkg/kubelet/kubelet_pods.go makeEnvironmentVariables: a missing, non-optional
    # secretKeyRef fails the container (CreateContainerConfigError), retried; Helm's wait ends
    # at the 5m timeout, install retries 0: Stalled
    assert release.outcome == "Stalled"
    assert release.message == (
        "Helm install failed for release default/secret-from-hook with chart secret-from-hook@0.1.0: "
        "timeout waiting for: [Deployment/default/secret-from-hook-redis status: 'InProgress']"
    )
    assert any(e.message == 'Error: secret "argocd-redis" not found' for e in result.trace)
