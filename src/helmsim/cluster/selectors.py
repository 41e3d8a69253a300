"""Label selectors matched from manifests; written once in :mod:`helmsim.kube.selectors`."""

from helmsim.kube.selectors import matches_map, matches_selector

__all__ = ["matches_map", "matches_selector"]
