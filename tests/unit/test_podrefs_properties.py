"""helmsim.cluster.podrefs on arbitrary pod-shaped data: it never raises, optional references
never fail a pod, and a reference to an object that exists with every key never fails it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.cluster import podrefs

_names = st.sampled_from(["a", "b", "c"])
_junk = st.one_of(
    st.none(), st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=2)
)


def _ref(name_field: str) -> st.SearchStrategy[Any]:
    ref = st.fixed_dictionaries(
        {name_field: _names},
        optional={
            "optional": st.booleans(),
            "key": _names,
            "items": st.one_of(
                _junk,
                st.lists(st.one_of(_junk, st.fixed_dictionaries({"key": _names})), max_size=3),
            ),
        },
    )
    return st.one_of(ref, _junk)


_volume = st.one_of(
    _junk,
    st.fixed_dictionaries({"name": _names, "secret": _ref("secretName")}),
    st.fixed_dictionaries({"name": _names, "configMap": _ref("name")}),
    st.fixed_dictionaries(
        {
            "name": _names,
            "projected": st.one_of(
                _junk,
                st.fixed_dictionaries(
                    {
                        "sources": st.lists(
                            st.one_of(
                                _junk,
                                st.fixed_dictionaries({"secret": _ref("name")}),
                                st.fixed_dictionaries({"configMap": _ref("name")}),
                            ),
                            max_size=3,
                        )
                    }
                ),
            ),
        }
    ),
)
_env = st.one_of(
    _junk,
    st.fixed_dictionaries(
        {
            "name": _names,
            "valueFrom": st.one_of(
                _junk,
                st.fixed_dictionaries({"configMapKeyRef": _ref("name")}),
                st.fixed_dictionaries({"secretKeyRef": _ref("name")}),
            ),
        }
    ),
)
_env_from = st.one_of(
    _junk,
    st.fixed_dictionaries({"configMapRef": _ref("name")}),
    st.fixed_dictionaries({"secretRef": _ref("name")}),
)
_container = st.fixed_dictionaries(
    {"name": _names},
    optional={
        "env": st.one_of(_junk, st.lists(_env, max_size=3)),
        "envFrom": st.one_of(_junk, st.lists(_env_from, max_size=3)),
    },
)
_pod = st.fixed_dictionaries(
    {
        "metadata": st.just({"namespace": "ns"}),
        "spec": st.one_of(
            _junk,
            st.fixed_dictionaries(
                {},
                optional={
                    "volumes": st.one_of(_junk, st.lists(_volume, max_size=4)),
                    "containers": st.lists(_container, max_size=2),
                    "imagePullSecrets": st.one_of(
                        _junk,
                        st.lists(
                            st.one_of(_junk, st.fixed_dictionaries({"name": _names})), max_size=2
                        ),
                    ),
                },
            ),
        ),
    }
)


def _nothing(kind: str, ns: str, name: str) -> None:
    return None


def _everything(kind: str, ns: str, name: str) -> dict[str, Any]:
    full = dict.fromkeys("abc", "eA==")
    return {"kind": kind, "metadata": {"name": name, "namespace": ns}, "data": full}


def _strip_required(pod: Any) -> list[podrefs.Reference]:
    return [r for r in podrefs.references(pod) if not r.optional]


@settings(max_examples=400, derandomize=True, deadline=None)
@given(_pod)
def test_references_resolve_without_raising_and_existing_objects_never_fail(
    pod: dict[str, Any],
) -> None:
    spec = pod["spec"] if isinstance(pod["spec"], dict) else {}
    containers = [c for c in spec.get("containers") or () if isinstance(c, dict)]
    # everything exists with every key: nothing fails
    assert podrefs.mount_errors(pod, _everything) == {}
    assert all(podrefs.env_error(c, "ns", _everything) is None for c in containers)
    assert podrefs.missing_pull_secrets(pod, _everything) == []
    # nothing exists: only the non-optional references can fail, and each failure names one
    failing = podrefs.mount_errors(pod, _nothing)
    required = {r.name for r in _strip_required(pod)}
    for err in failing.values():
        assert any(f'"{n}" not found' in err for n in required), err
    if not required:
        assert failing == {}
        assert all(podrefs.env_error(c, "ns", _nothing) is None for c in containers)
