"""helmsim.wildcard answers as fnmatch.fnmatchcase does (the catalog's image, argument and
variable patterns, and checks' unlessArgs, go through it)."""

from __future__ import annotations

import fnmatch

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from helmsim import wildcard

# few letters, so pieces repeat and overlap; "*" often; "/", ".", ":" and a newline as in images
_ALPHABET = st.sampled_from(["a", "b", "ab", "/", ".", ":", "\n", "é", "*", "**"])
_NAMES = st.lists(st.sampled_from(["a", "b", "/", ".", ":", "\n", "é"]), max_size=12).map("".join)
_PATTERNS = st.lists(_ALPHABET, max_size=8).map("".join)


@settings(max_examples=3000, deadline=None)
@given(_NAMES, _PATTERNS)
@example("aba", "*ab*a")  # the leftmost piece leaves room for the tail
@example("ab", "a*b*")
@example("abab", "a*ab*b")  # a piece may not run into the tail
@example("a", "a*a")  # pieces may not overlap the head and the tail
@example("", "*")
def test_same_answer_as_fnmatchcase(name: str, pattern: str) -> None:
    assert wildcard.matches(name, pattern) is fnmatch.fnmatchcase(name, pattern)


@pytest.mark.parametrize(
    ("name", "pattern", "expected"),
    [
        ("docker.io/bitnami/redis", "*/bitnami/redis", True),
        ("docker.io/bitnami/redis-cluster", "*/bitnami/redis", False),
        ("--project-id=x", "--project-id=?*", True),  # "?" goes to fnmatch
        ("--project-id=", "--project-id=?*", False),
        ("v1", "v[0-9]", True),
        ("A", "a", False),  # case-sensitive, as fnmatchcase
    ],
)
def test_catalog_shapes(name: str, pattern: str, expected: bool) -> None:
    assert wildcard.matches(name, pattern) is expected
