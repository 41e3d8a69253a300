"""Label selectors as the policy evaluator imports them; written once in :mod:`helmsim.kube.selectors`."""

from helmsim.kube.selectors import (
    MATCH_ALL,
    RESERVED_PREFIX,
    Labels,
    Requirement,
    Selector,
    compile_selector,
    labels_selector,
)

__all__ = ["MATCH_ALL", "RESERVED_PREFIX", "Labels", "Requirement", "Selector", "compile_selector", "labels_selector"]
