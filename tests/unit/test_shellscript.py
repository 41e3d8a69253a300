"""The shell-variable reader behind wait-loop peers (helmsim.cluster.shellscript)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from helmsim.cluster import shellscript

APISIX = """
retry_while() {
  local -r cmd="${1:?cmd is missing}"
  for ((i = 1 ; i <= retries ; i+=1 )); do
      "${command[@]}" && return_value=0 && break
  done
}
host="http://inner:1"
etcd_hosts=(
  "http://etcd-0:2379"
  "http://$PEER:2379"
)
for host in "${etcd_hosts[@]}"; do
    if retry_while "check_etcd $host"; then echo ok; fi
done
"""


def test_top_level_drops_function_bodies() -> None:
    text = shellscript.top_level(APISIX)
    assert "local -r cmd" not in text and 'host="http://inner:1"' in text


def test_assignments_expand_in_order_and_keep_unknowns() -> None:
    scope = shellscript.assignments('a=x\nlocal -r b="$a:1"\nexport c=${b}/$none\nd=(1 2)\n', {})
    assert scope == {"a": "x", "b": "x:1", "c": "x:1/$none"}


def test_loop_values_read_the_array_it_loops_over() -> None:
    at = APISIX.index("retry_while \"check_etcd")
    assert shellscript.loop_values(APISIX, at, {"PEER": "peer"}) == ("host", ["http://etcd-0:2379", "http://peer:2379"])


def test_no_loop_value_outside_the_loop_or_unread() -> None:
    assert shellscript.loop_values(APISIX, APISIX.index("etcd_hosts=("), {}) is None
    # the C-style `for ((…))` of retry_while itself is not a list loop
    assert shellscript.loop_values(APISIX, APISIX.index('"${command[@]}"'), {}) is None
    assert shellscript.loop_values('for h in "${missing[@]}"; do\n x $h\ndone', 20, {}) is None
    assert shellscript.loop_values("for h in $(cat hosts); do\n x $h\ndone", 25, {}) is None


def test_a_loop_over_words_and_the_innermost_wins() -> None:
    script = "for a in x y; do\n  for b in p q; do\n    probe $a $b\n  done\ndone"
    assert shellscript.loop_values(script, script.index("probe"), {}) == ("b", ["p", "q"])


def test_commands_split_pipelines_and_drop_keywords() -> None:
    assert shellscript.commands('if curl -s "$u" | grep ok; then') == ['curl -s "$u"', "grep ok"]
    assert shellscript.commands("while ! nc -z db 5432 && true; do") == ["nc -z db 5432", "true"]


@given(st.text(max_size=400), st.integers(min_value=0, max_value=400))
def test_readers_never_raise(text: str, at: int) -> None:
    shellscript.top_level(text)
    shellscript.assignments(text, {})
    shellscript.arrays(text, {})
    found = shellscript.loop_values(text, min(at, len(text)), {})
    assert found is None or (found[1] and len(found[1]) <= shellscript.MAX_VALUES)
    shellscript.commands(text)
