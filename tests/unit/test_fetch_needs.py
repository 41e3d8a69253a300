"""A container that fetches a URL as it runs needs that URL's host (issue 14: needs of programs;
the shapes: argo-helm charts/argo-workflows/templates/crds-install-job.yaml, bitnami/charts
bitnami/nginx/templates/deployment.yaml `git-clone-repository`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helmsim.cluster.behaviour import BehaviourContext, fetches, model_pod

NS = "apps"

# (script, needs) — the rows read as what a platform engineer writes in a Job or init container
CASES = [
    ("kubectl apply --server-side -f https://raw.githubusercontent.com/argoproj/argo-helm/x/crds.yaml", ["raw.githubusercontent.com:443"]),
    ("kubectl create -f=http://files.example.com:8080/a.yaml", ["files.example.com:8080"]),
    ("kubectl apply --filename https://a.example.com/x.yaml --filename https://b.example.com/y.yaml", ["a.example.com:443", "b.example.com:443"]),
    ("kubectl apply -f /manifests/x.yaml", []),  # a mounted file: read by the kubectl-apply handler instead
    ("kubectl get --raw /version", []),
    ("[[ -f /opt/x.sh ]] && source /opt/x.sh; git clone https://github.com/mdn/site.git --branch main /tmp/app", ["github.com:443"]),
    ("git clone git@github.com:org/repo.git /src", ["github.com:22"]),
    ("git clone ssh://git@git.example.com:2222/org/repo.git", ["git.example.com:2222"]),
    ("set -e; curl -sfL https://get.example.com/install.sh | sh", ["get.example.com:443"]),
    ("wget -qO- http://10.0.0.7:9000/health", ["10.0.0.7/32:9000"]),
    ("until curl -sf https://api.github.com/zen; do sleep 10; done", []),  # a wait loop, modelled as one
    ("echo https://docs.example.com; sleep 3600", []),  # printed, not fetched
    ("HTTPS_PROXY= exec curl https://x.example.com/a", ["x.example.com:443"]),
]


@pytest.mark.parametrize(("script", "needs"), CASES)
def test_what_a_script_fetches(script: str, needs: list[str]) -> None:
    assert [str(n) for n, _ in fetches(script, NS)] == needs


def test_an_in_cluster_url_is_the_service() -> None:
    (need, why), = fetches("curl -sf http://api.apps:8080/seed", NS, services={(NS, "api")})
    assert str(need) == "svc/apps/api:8080"
    assert why == "needs svc/apps/api:8080: runs `curl … http://api.apps:8080/seed`, which fetches it (assumed to exit non-zero when it cannot)"


def _pod(init_script: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": NS, "labels": {"app": "web"}},
        "spec": {
            "initContainers": [{"name": "clone", "image": "example.com/git:1", "command": ["/bin/bash", "-ec", init_script]}],
            "containers": [{"name": "web", "image": "example.com/web:1"}],
        },
    }


def test_an_init_container_that_clones_needs_the_host_and_dns() -> None:
    model = model_pod(_pod("git clone https://github.com/org/site.git /app"), BehaviourContext())
    clone = model.container("clone")
    assert [str(n) for n in clone.needs] == ["dns", "github.com:443"]
    assert any(n.startswith("needs github.com:443: runs `git … https://github.com/org/site.git`") for n in clone.notes)


def test_kubectl_apply_of_a_url_says_its_objects_are_not_created() -> None:
    model = model_pod(_pod("kubectl apply -f https://example.com/crds.yaml"), BehaviourContext())
    notes = model.container("clone").notes
    assert any(n.endswith("what it serves is not read: the simulation creates none of its objects") for n in notes)


@given(st.text(max_size=300))
def test_any_script_is_read_without_error(script: str) -> None:
    for need, why in fetches(script, NS):
        assert why.startswith(f"needs {need}: runs `")


# bitnami/charts bitnami/appsmith templates/client/deployment.yaml: an init container curls the
# backend through variables its own environment sets
_BACKEND = 'curl -sf "http://$APPSMITH_API_HOST:${APPSMITH_API_PORT}/api/v1/health"'


def test_a_url_built_from_the_containers_environment_is_the_peer_it_names() -> None:
    env = {"APPSMITH_API_HOST": "appsmith-backend", "APPSMITH_API_PORT": "8080"}
    ((need, why),) = fetches(_BACKEND, NS, services={(NS, "appsmith-backend")}, env=env)
    assert str(need) == f"svc/{NS}/appsmith-backend:8080"
    assert "http://appsmith-backend:8080/api/v1/health" in why


def test_a_url_whose_host_no_variable_sets_is_not_read() -> None:
    assert fetches(_BACKEND, NS, env={}) == []


@pytest.mark.parametrize("script", ["sleep infinity", "#!/bin/bash\nsleep infinity\n", "exec tail -f /dev/null"])
def test_a_container_that_only_sleeps_dials_nothing_its_environment_names(script: str) -> None:
    # bitnami/charts bitnami/mlflow templates/run/deployment.yaml: bash -ec 'sleep infinity' with
    # MLFLOW_TRACKING_URI set for the jobs run in it later
    pod = {
        "metadata": {"name": "run-0", "namespace": NS},
        "spec": {"containers": [{
            "name": "run", "image": "docker.io/bitnami/mlflow:3", "command": ["bash"], "args": ["-ec", script],
            "env": [{"name": "MLFLOW_TRACKING_URI", "value": "http://tracking:80"}],
        }]},
    }
    ctx = BehaviourContext(services=[{"metadata": {"name": "tracking", "namespace": NS}, "spec": {"selector": {"app": "t"}, "ports": [{"port": 80}]}}])
    model = model_pod(pod, ctx).containers["run"]
    assert model.needs == ()
    assert model.run_seconds is None
