"""helmsim.cluster.scheduling on arbitrary pod-shaped data: filtering never raises, a pod with no
constraints fits every untainted node, and the FailedScheduling message counts every node once."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.cluster.scheduling import NodeInfo, PodInfo, Snapshot, Taint, filter_nodes

_text = st.sampled_from(["a", "b", "zone", "kubernetes.io/hostname", ""])
_junk = st.one_of(st.none(), st.integers(-2, 3), _text, st.lists(_text, max_size=2), st.booleans())
_expr = st.fixed_dictionaries(
    {
        "key": _text,
        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Bad"]),
    },
    optional={"values": st.one_of(_junk, st.lists(_text, max_size=2))},
)
_selector = st.one_of(
    _junk,
    st.fixed_dictionaries(
        {},
        optional={
            "matchLabels": st.dictionaries(_text, _text, max_size=2),
            "matchExpressions": st.lists(_expr, max_size=2),
        },
    ),
)
_term = st.one_of(
    _junk,
    st.fixed_dictionaries(
        {"topologyKey": _text},
        optional={
            "labelSelector": _selector,
            "namespaces": st.one_of(_junk, st.lists(_text, max_size=2)),
            "namespaceSelector": _selector,
            "matchLabelKeys": st.one_of(_junk, st.lists(_text, max_size=2)),
        },
    ),
)
_req = st.fixed_dictionaries(
    {
        "requiredDuringSchedulingIgnoredDuringExecution": st.one_of(
            _junk, st.lists(_term, max_size=2)
        )
    }
)
_spread = st.fixed_dictionaries(
    {
        "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
        "topologyKey": _text,
    },
    optional={
        "maxSkew": _junk,
        "minDomains": _junk,
        "labelSelector": _selector,
        "matchLabelKeys": _junk,
        "nodeAffinityPolicy": _junk,
        "nodeTaintsPolicy": _junk,
    },
)
_spec = st.fixed_dictionaries(
    {},
    optional={
        "affinity": st.one_of(
            _junk,
            st.fixed_dictionaries(
                {},
                optional={
                    "podAffinity": st.one_of(_junk, _req),
                    "podAntiAffinity": st.one_of(_junk, _req),
                },
            ),
        ),
        "topologySpreadConstraints": st.one_of(
            _junk, st.lists(st.one_of(_junk, _spread), max_size=2)
        ),
        "tolerations": st.one_of(
            _junk,
            st.lists(
                st.one_of(
                    _junk,
                    st.fixed_dictionaries(
                        {"key": _text, "operator": st.sampled_from(["Exists", "Equal"])}
                    ),
                ),
                max_size=2,
            ),
        ),
        "nodeSelector": st.one_of(_junk, st.dictionaries(_text, _text, max_size=2)),
        "containers": st.one_of(
            _junk,
            st.lists(
                st.fixed_dictionaries(
                    {
                        "resources": st.one_of(
                            _junk,
                            st.fixed_dictionaries(
                                {
                                    "requests": st.one_of(
                                        _junk,
                                        st.dictionaries(
                                            st.sampled_from(["cpu", "memory", "x.io/gpu"]),
                                            st.one_of(_text, st.integers(0, 3)),
                                            max_size=2,
                                        ),
                                    )
                                }
                            ),
                        )
                    }
                ),
                max_size=2,
            ),
        ),
        "priority": _junk,
    },
)
_labels = st.dictionaries(_text, _text, max_size=2)
NODES = [
    NodeInfo("n1", {"kubernetes.io/hostname": "n1", "zone": "a"}, (), {"cpu": 2000, "pods": 3}),
    NodeInfo("n2", {"kubernetes.io/hostname": "n2", "zone": "b"}, (Taint("t", "", "NoSchedule"),)),
]


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    _spec, _labels, st.lists(st.tuples(_spec, _labels, st.sampled_from(["n1", "n2"])), max_size=3)
)
def test_filtering_arbitrary_pods_never_raises(
    spec: Any, labels: dict[str, str], others: list[Any]
) -> None:
    if not isinstance(spec, dict):
        spec = {}
    existing = [
        PodInfo("ns", f"o{i}", lab, s if isinstance(s, dict) else {}, node=n)
        for i, (s, lab, n) in enumerate(others)
    ]
    result = filter_nodes(PodInfo("ns", "p", labels, spec), Snapshot(NODES, existing))
    assert set(result.feasible) | set(result.statuses) == {"n1", "n2"}
    if not result.feasible:
        msg = result.message(len(NODES))
        counts = [int(n) for n in re.findall(r"(?:: |, )(\d+) ", msg.split(" preemption: ")[0])]
        assert sum(counts) >= len(NODES)


def test_a_pod_without_constraints_fits_the_untainted_node() -> None:
    result = filter_nodes(PodInfo("ns", "p", {}, {}), Snapshot(NODES, []))
    assert result.feasible == ["n1"]
    assert result.statuses["n2"].reasons == ("node(s) had untolerated taint {t: }",)
