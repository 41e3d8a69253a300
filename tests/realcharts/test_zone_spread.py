"""A spread on a label the nodes lack: kind's node has no zone label, so the pods stay Pending
(podtopologyspread ErrReasonNodeLabelNotMatch), and the fix names only the topology keys the
profile's nodes carry (tests/realcharts/zone-spread)."""

from __future__ import annotations

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs
from realcharts_helpers import HERE


def _hs115(profile: str) -> list:
    releases = build_inputs(str(HERE / "zone-spread"))
    report = run_check(releases, [load_profile(profile)], options=CheckOptions(horizon=600))
    return [f for f in report.findings if f.rule == "HS115"]


def test_the_fix_offers_only_labels_kinds_node_has() -> None:
    (finding,) = _hs115("kind")
    assert "the nodes lack the topology spread constraint's topologyKey label" in finding.message
    assert [fx.summary for fx in finding.fixes] == ["spread on a label the nodes have (kubernetes.io/hostname)"]


def test_zoned_nodes_take_the_spread() -> None:
    assert _hs115("eks-gp3") == []
