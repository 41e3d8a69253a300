"""Images the kubelet cannot get (tests/realcharts/image-pulls, HS126, docs/simulate.md#images).

The chart joins its image from values as Bitnami charts do; its default is a tag Bitnami
withdrew with docker.io/bitnami on 2025-09-29. Before, helmsim predicted Ready for all of these.
"""

from __future__ import annotations

from typing import Any

from realcharts_helpers import check_chart, simulate_chart

from helmsim.cluster.profile import Images, load_profile
from helmsim.simulate import SimulationResult

CHART = "image-pulls"
IMAGE = "docker.io/bitnami/nginx:1.29.1-debian-12-r0"


def _events(result: SimulationResult, reason: str) -> list[Any]:
    return [e for e in result.trace if e.what == "event" and e.data.get("reason") == reason and e.obj.startswith("Pod/")]


def _outcome(result: SimulationResult) -> str:
    return result.releases[0].outcome


def _profile(**images: list[str]) -> Any:
    kind = load_profile("kind")
    return kind.model_copy(update={"images": Images(**images)})


def test_a_withdrawn_bitnami_image_is_not_found_and_the_release_stalls() -> None:
    result = simulate_chart(CHART)
    assert _outcome(result) == "Stalled"
    failed = [e.message for e in _events(result, "Failed") if e.message.startswith("Failed to pull image")]
    assert failed[0] == (
        f'Failed to pull image "{IMAGE}": rpc error: code = NotFound desc = failed to pull and unpack image "{IMAGE}": '
        f'failed to resolve reference "{IMAGE}": {IMAGE}: not found'
    )
    assert _events(result, "BackOff"), "the kubelet backs off and pulls again"
    assert len(failed) >= 2, "every retry fails the same way"
    # nothing is assumed of how an image that never runs behaves
    assert not [e for e in result.trace if e.what == "behaviour-assumed" and "bitnami/nginx" in e.message]


def test_hs126_names_the_withdrawal_and_verifies_the_legacy_copy() -> None:
    report = check_chart(CHART, release_name="web", verify_fixes=True)
    (finding,) = [f for f in report.findings if f.rule == "HS126"]
    text = finding.worst.message
    assert "docker.io/bitnami/nginx:1.29.1-debian-12-r0" in text and "2025-09-29" in text
    assert "https://github.com/bitnami/containers/issues/83267" in text
    moved = finding.fixes[0]
    assert moved.summary.startswith("pull docker.io/bitnamilegacy/nginx:1.29.1-debian-12-r0 instead")
    assert moved.verified is True


def test_the_legacy_copy_is_pulled() -> None:
    result = simulate_chart(CHART, sets=("image.repository=bitnamilegacy/nginx",))
    assert _outcome(result) == "Ready"
    assert _events(result, "Pulled")[0].message.startswith('Successfully pulled image "docker.io/bitnamilegacy/nginx:1.29.1-debian-12-r0"')


def test_a_legacy_tag_bitnami_may_not_have_copied_is_said_not_failed() -> None:
    """The evidence is mixed (bitnami/containers#86251 against #83640): a note, not a failure."""
    result = simulate_chart(CHART, sets=("image.repository=bitnamilegacy/nginx", "image.tag=1.21.6-debian-10-r0"))
    assert _outcome(result) == "Ready"
    said = [e.message for e in result.trace if e.what == "behaviour-assumed" and "may be missing" in e.message]
    assert len(said) == 1 and said[0].startswith("docker.io/bitnamilegacy/nginx:1.21.6-debian-10-r0: assumed pullable")


def test_a_mirror_the_profile_names_still_serves_it() -> None:
    result = simulate_chart(CHART, _profile(pullable=["bitnami/*"]))
    assert _outcome(result) == "Ready"


def test_latest_is_assumed_pullable_and_said_once() -> None:
    result = simulate_chart(CHART, sets=("image.tag=latest",))
    assert _outcome(result) == "Ready"
    said = [e.message for e in result.trace if e.what == "behaviour-assumed" and "assumed pullable" in e.message]
    assert said == [
        "docker.io/bitnami/nginx:latest: assumed pullable, but docker.io/bitnami keeps only the latest tag of the "
        "images in Bitnami's free subset (bitnami/containers#83267); helmsim does not know whether this one is"
    ]


def test_an_unset_tag_is_an_invalid_image_name() -> None:
    result = simulate_chart(CHART, sets=("image.tag=",))
    assert _outcome(result) == "Stalled"
    (inspect,) = {e.message for e in _events(result, "InspectFailed")}
    assert inspect == (
        'Failed to apply default image tag "docker.io/bitnami/nginx:": couldn\'t parse image name '
        '"docker.io/bitnami/nginx:": invalid reference format'
    )
    assert "Error: InvalidImageName" in {e.message for e in _events(result, "Failed")}
    assert not _events(result, "Pulling"), "the kubelet never pulls a reference it cannot parse"


def test_pull_policy_never_needs_the_image_on_the_node() -> None:
    sets = ("image.repository=example/web", "image.tag=dev", "image.pullPolicy=Never")
    result = simulate_chart(CHART, sets=sets)
    assert _outcome(result) == "Stalled"
    (never,) = {e.message for e in _events(result, "ErrImageNeverPull")}
    assert never == 'Container image "docker.io/example/web:dev" is not present with pull policy of Never'
    loaded = simulate_chart(CHART, _profile(present=["docker.io/example/web:*"]), sets=sets)
    assert _outcome(loaded) == "Ready"
    assert _events(loaded, "Pulled")[0].message == 'Container image "docker.io/example/web:dev" already present on machine'


def test_a_present_image_is_still_pulled_under_always() -> None:
    """kind load puts the image on the node, but Always asks the registry, which withdrew it."""
    result = simulate_chart(CHART, _profile(present=["bitnami/*"]), sets=("image.pullPolicy=Always",))
    assert _outcome(result) == "Stalled"
    assert _events(result, "Pulling")
    present = simulate_chart(CHART, _profile(present=["bitnami/*"]))
    assert _outcome(present) == "Ready"


def test_the_sealed_secrets_images_are_kept() -> None:
    result = simulate_chart(CHART, sets=("image.repository=bitnami/sealed-secrets-controller", "image.tag=0.31.0"))
    assert _outcome(result) == "Ready"


def test_hs126_explains_an_invalid_reference() -> None:
    report = check_chart(CHART, release_name="web", values=("ci/unset-tag-values.yaml",))
    (finding,) = [f for f in report.findings if f.rule == "HS126"]
    assert "its reference does not parse" in finding.worst.message
    assert "InvalidImageName" in finding.worst.message
    assert finding.fixes[0].summary.startswith("give the container a valid image reference")


def test_never_finds_the_image_once_the_node_has_it() -> None:
    """The kubelet syncs the pod again: an image a sibling container pulled is then present."""
    sets = ("image.repository=bitnamilegacy/nginx", "image.pullPolicy=Never", "sidecar.enabled=true")
    result = simulate_chart(CHART, sets=sets)
    assert _events(result, "ErrImageNeverPull")
    assert _outcome(result) == "Ready"
    report = check_chart(CHART, release_name="web", values=("ci/never-with-sidecar-values.yaml",))
    assert "HS126" not in [f.rule for f in report.findings]


def test_an_invalid_image_beside_a_sidecar_that_starts_is_still_found() -> None:
    report = check_chart(CHART, release_name="web", values=("ci/unset-tag-values.yaml", "ci/sidecar-values.yaml"))
    (finding,) = [f for f in report.findings if f.rule == "HS126"]
    assert "its reference does not parse" in finding.worst.message


def test_whitespace_around_the_image_is_refused_in_the_pod() -> None:
    result = simulate_chart(CHART, sets=("image.repository=bitnamilegacy/nginx", "image.tag=1.29.1-debian-12-r0 "))
    assert _outcome(result) == "Stalled"
    created = [e.message for e in result.trace if e.what == "event" and e.data.get("reason") == "FailedCreate"]
    assert created and created[0].endswith(
        'spec.containers[0].image: Invalid value: "docker.io/bitnamilegacy/nginx:1.29.1-debian-12-r0 ": '
        "must not have leading or trailing whitespace"
    )
    report = check_chart(CHART, release_name="web", values=("ci/spaced-tag-values.yaml",))
    (finding,) = [f for f in report.findings if f.rule == "HS126"]
    assert "its pods are never created" in finding.worst.message
