"""Kustomize's transformations, as kustomize v5 (sigs.k8s.io/kustomize api + kyaml) applies them:
strategic-merge patches with the Kubernetes OpenAPI's patch strategies and merge keys
(``smp``), JSON 6902 patches through the ``jsonpatch`` library (``json6902``), ``images``
(``images``), patch targets (``select``), the ``patches`` entry (``patches``) and a
kustomization build (``build``). Used by helm-controller's post-renderers and by
kustomize-controller.
"""

from __future__ import annotations


# api/konfig/general.go RecognizedKustomizationFileNames
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


class KustomizeError(Exception):
    """What kustomize's build returns as its error (its text, for the messages Flux wraps)."""


__all__ = ["KUSTOMIZATION_NAMES", "KustomizeError"]
