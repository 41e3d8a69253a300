"""Properties of helmsim.helm.order beyond the ported tables."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from helmsim.helm.order import (
    INSTALL_ORDER_V3,
    INSTALL_ORDER_V4,
    hook_order,
    kind_groups,
    manifest_order,
    sort_by_kind,
)
from helmsim.manifests import parse_documents

_KINDS = st.sampled_from(
    ["Job", "ConfigMap", "Namespace", "CiliumNetworkPolicy", "Certificate", "ServiceMonitor",
     "NetworkPolicy", "MutatingWebhookConfiguration", "Deployment", "Service", "aLowerKind"]
)


@given(st.lists(_KINDS, max_size=30), st.sampled_from([INSTALL_ORDER_V3, INSTALL_ORDER_V4]))
def test_sort_by_kind_is_helms_total_order(kinds: list[str], order: tuple[str, ...]) -> None:
    items = list(enumerate(kinds))
    got = sort_by_kind(items, lambda item: item[1], order)
    assert sorted(got) == sorted(items)  # a permutation
    pos = {k: i for i, k in enumerate(order)}
    for (ia, ka), (ib, kb) in zip(got, got[1:], strict=False):
        if ka in pos and kb in pos:
            assert pos[ka] <= pos[kb]
        elif ka in pos:
            pass  # known before unknown
        else:
            assert kb not in pos, "an unknown kind never precedes a known one"
            assert ka.encode() <= kb.encode(), "unknown kinds in byte order"
        if ka == kb:
            assert ia < ib, "same kind keeps input order"


@given(st.lists(_KINDS, max_size=30))
def test_kind_groups_partition_into_maximal_runs(kinds: list[str]) -> None:
    docs = "\n---\n".join(
        f"apiVersion: v1\nkind: {k}\nmetadata:\n  name: n{i}" for i, k in enumerate(kinds)
    )
    resources = parse_documents([("t.yaml", docs)]).resources
    groups = kind_groups(resources)
    assert [r for _, rs in groups for r in rs] == resources
    assert all(all(r.kind == k for r in rs) for k, rs in groups)
    assert all(a[0] != b[0] for a, b in zip(groups, groups[1:], strict=False))
    # after Helm's ordering each kind is one batch
    ordered = kind_groups(manifest_order(resources))
    assert len({k for k, _ in ordered}) == len(ordered)


def test_generate_name_hook_sorts_as_empty_name() -> None:
    """Hook.Name is metadata.name, "" for a generateName-only hook: first at its weight."""
    text = (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: aaa\n"
        "  annotations: {helm.sh/hook: pre-install}\n---\n"
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: zzz-\n"
        "  annotations: {helm.sh/hook: pre-install}\n"
    )
    resources = parse_documents([("t.yaml", text)]).resources
    assert [r.name for r in hook_order(resources, "pre-install")] == ["zzz-", "aaa"]


def test_hook_order_skips_non_hooks_and_other_events() -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: post\n"
        "  annotations: {helm.sh/hook: post-install}\n"
    )
    resources = parse_documents([("t.yaml", text)]).resources
    assert hook_order(resources, "pre-install") == []
    assert [r.name for r in hook_order(resources, "post-install")] == ["post"]
