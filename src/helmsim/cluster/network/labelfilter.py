"""Cilium's identity label filter: which of a pod's labels make up its security identity.

Only the labels the filter keeps are matched by policy selectors, so a filter that drops the
label a CiliumNetworkPolicy selects on leaves the pod unselected (cilium/cilium#18878). The
rules mirror cilium/cilium pkg/labelsfilter/filter.go (``parseLabelPrefix``,
``defaultLabelPrefixCfg``, ``filterLabels``); the agent's ``labels`` option (Helm value
``labels``) adds prefixes to the defaults.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from msgspec import Struct

from helmsim.errors import InputError

# Every pod label reaches Cilium with source "k8s" (pkg/labels/labels.go LabelSourceK8s).
K8S_SOURCE = "k8s"

# pkg/labelsfilter/filter.go defaultLabelPrefixCfg, in its order (reserved:.* is omitted: pod
# labels are never reserved ones).
DEFAULT_PREFIXES: tuple[str, ...] = (
    re.escape("io.kubernetes.pod.namespace"),
    re.escape("io.cilium.k8s.namespace.labels"),
    re.escape("app.kubernetes.io"),
    re.escape("io.cilium.k8s.policy.cluster"),
    r"!io\.kubernetes",
    r"!kubernetes\.io",
    "!" + re.escape("statefulset.kubernetes.io/pod-name"),
    "!" + re.escape("apps.kubernetes.io/pod-index"),
    "!" + re.escape("batch.kubernetes.io/job-completion-index"),
    r"!.*beta\.kubernetes\.io",
    r"!k8s\.io",
    "!pod-template-generation",
    "!pod-template-hash",
    "!controller-revision-hash",
    "!annotation.*",
    "!etcd_node",
)


class LabelPrefix(Struct, frozen=True):
    """One prefix rule: ``[source:][!]regexp``, anchored at the start of the label key."""

    text: str
    source: str
    ignore: bool
    expr: re.Pattern[str]

    def match_len(self, key: str, source: str = K8S_SOURCE) -> int:
        """The length of the matched start of ``key`` (0: no match)."""
        # filter.go LabelPrefix.matches: the source must agree when given; the leftmost match of
        # the regexp counts only when it starts at the beginning of the key.
        if self.source and self.source != source:
            return 0
        m = self.expr.search(key)
        if m is None or m.start() != 0:
            return 0
        return max(m.end(), 1)


def parse_prefix(text: str, *, where: str = "identityLabels") -> LabelPrefix:
    """filter.go parseLabelPrefix: ``source:`` before the first colon, then ``!`` to ignore."""
    source, sep, prefix = text.partition(":")
    if not sep:
        source, prefix = "", text
    if not prefix:
        raise InputError(f"{where}: invalid label prefix {text!r}")
    ignore = prefix.startswith("!")
    if ignore:
        prefix = prefix[1:]
    try:
        expr = re.compile(prefix)
    except re.error as err:
        raise InputError(f"{where}: label prefix {text!r} is not a regular expression: {err}") from None
    return LabelPrefix(text, source, ignore, expr)


@dataclass(frozen=True)
class LabelFilter:
    """The agent's filter: the default prefixes plus the user's (``labels`` option)."""

    prefixes: tuple[LabelPrefix, ...]
    whitelist: bool  # an inclusive user prefix exists: a label must match an inclusive rule
    _kept: dict[tuple[str, str], bool] = field(default_factory=dict, compare=False, repr=False)
    """:meth:`keeps` answers by (key, source): a pod's labels are filtered on every identity."""

    @classmethod
    def build(cls, user: Iterable[str] = (), *, where: str = "identityLabels") -> LabelFilter:
        """filter.go ParseLabelPrefixCfg: defaults, then the user's; any inclusive user prefix
        turns the filter into a whitelist."""
        defaults = tuple(parse_prefix(p) for p in DEFAULT_PREFIXES)
        extra = tuple(parse_prefix(p, where=where) for p in user if p)
        return cls(defaults + extra, any(not p.ignore for p in extra))

    def keeps(self, key: str, source: str = K8S_SOURCE) -> bool:
        """filter.go filterLabels: kept when no inclusive rule is required and none ignores it,
        or when the longest inclusive match is longer than the shortest ignoring one."""
        known = self._kept.get((key, source))
        if known is None:
            known = self._kept[(key, source)] = self._keeps(key, source)
        return known

    def _keeps(self, key: str, source: str) -> bool:
        included = ignored = 0
        for p in self.prefixes:
            n = p.match_len(key, source)
            if not n:
                continue
            if p.ignore:
                ignored = n if ignored == 0 or n < ignored else ignored
            else:
                included = max(included, n)
        return (not self.whitelist and ignored == 0) or included > ignored

    def identity_labels(self, labels: Mapping[str, str]) -> dict[str, str]:
        """The labels that make up the identity."""
        return {k: v for k, v in labels.items() if self.keeps(k)}

    def dropped(self, labels: Mapping[str, str]) -> list[str]:
        """The keys the filter drops (information-only labels), sorted."""
        return sorted(k for k in labels if not self.keeps(k))


DEFAULT_FILTER = LabelFilter.build()
