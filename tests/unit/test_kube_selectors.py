"""The label selector forms agree: a manifest matched directly, compiled, or written as a string.

Random selectors over a small key/value alphabet, each in its three spellings — a LabelSelector
manifest (``matches_selector``), the same compiled (``compile_selector``) and the kubectl string
(``helmsim.kube.labels.parse``) — must select exactly the same label sets.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.kube import labels as strings
from helmsim.kube.selectors import compile_selector, matches_map, matches_selector

KEYS = ("app", "tier", "env")
VALUES = ("a", "b", "c")
LABELS = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
EXPR = st.one_of(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(("In", "NotIn")), st.sets(st.sampled_from(VALUES), min_size=1)),
    st.tuples(st.sampled_from(KEYS), st.sampled_from(("Exists", "DoesNotExist")), st.just(frozenset())),
)


def _string(match_labels: dict[str, str], exprs: list[tuple[str, str, frozenset[str]]]) -> str:
    parts = [f"{k}={v}" for k, v in match_labels.items()]
    for key, op, values in exprs:
        listed = ",".join(sorted(values))
        parts.append(
            {"In": f"{key} in ({listed})", "NotIn": f"{key} notin ({listed})", "Exists": key, "DoesNotExist": f"!{key}"}[op]
        )
    return ",".join(parts)


@settings(max_examples=300, deadline=None)
@given(LABELS, st.lists(EXPR, max_size=3), st.lists(LABELS, min_size=1, max_size=6))
def test_the_three_spellings_select_the_same(
    match_labels: dict[str, str], exprs: list[tuple[str, str, frozenset[str]]], candidates: list[dict[str, str]]
) -> None:
    manifest = {
        "matchLabels": match_labels,
        "matchExpressions": [
            {"key": k, "operator": op, **({"values": sorted(v)} if v else {})} for k, op, v in exprs
        ],
    }
    compiled = compile_selector(manifest)
    parsed = strings.parse(_string(match_labels, exprs))
    for labels in candidates:
        assert matches_selector(manifest, labels) == compiled.matches(labels) == parsed.matches(labels)


@given(LABELS, LABELS)
def test_a_map_selector_is_its_pairs_and_an_empty_one_selects_nothing(selector: dict[str, str], labels: dict[str, str]) -> None:
    expected = bool(selector) and all(labels.get(k) == v for k, v in selector.items())
    assert matches_map(selector, labels) == expected


def test_cilium_keys_drop_their_source_prefix() -> None:
    sel = compile_selector({"matchLabels": {"k8s:app": "web", "any:tier": "db"}}, cilium=True)
    assert sel.matches({"app": "web", "tier": "db"})
    assert not compile_selector({"matchLabels": {"k8s:app": "web"}}).matches({"app": "web"})
