"""The APIs a cluster running Flux serves: the toolkit controllers' CRDs (fluxcd/flux2
manifests/crds, v2.7: source-controller, kustomize-controller, helm-controller,
notification-controller, image-reflector/automation-controller). Every kind is namespaced."""

from __future__ import annotations

FLUX_APIS: frozenset[tuple[str, str]] = frozenset(
    (f"{group}/{version}", kind)
    for group, versions, kinds in (
        ("source.toolkit.fluxcd.io", ("v1", "v1beta2"), ("GitRepository", "HelmRepository", "HelmChart", "Bucket", "OCIRepository")),
        ("source.toolkit.fluxcd.io", ("v1",), ("ExternalArtifact",)),
        ("helm.toolkit.fluxcd.io", ("v2", "v2beta2"), ("HelmRelease",)),
        ("kustomize.toolkit.fluxcd.io", ("v1", "v1beta2"), ("Kustomization",)),
        ("notification.toolkit.fluxcd.io", ("v1",), ("Receiver",)),
        ("notification.toolkit.fluxcd.io", ("v1beta3", "v1beta2"), ("Alert", "Provider")),
        ("notification.toolkit.fluxcd.io", ("v1beta2",), ("Receiver",)),
        ("image.toolkit.fluxcd.io", ("v1", "v1beta2"), ("ImageRepository", "ImagePolicy", "ImageUpdateAutomation")),
    )
    for version in versions
    for kind in kinds
)
"""(apiVersion, kind) of every Flux custom resource."""
