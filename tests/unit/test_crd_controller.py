"""CRD establishment: NamesAccepted, Established after crd_establish, name conflicts, served kinds.

kind's latencies: controllerSync 0.05 s, crdEstablish 1 s.
"""

from __future__ import annotations

from typing import Any

from helmsim.cluster.controllers.crd import CRDController, condition, install_crds, served_kinds
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile

CRD = "CustomResourceDefinition"


def _crd(
    plural: str,
    kind: str,
    *,
    group: str = "example.com",
    short: list[str] | None = None,
    singular: str | None = None,
) -> dict[str, Any]:
    names: dict[str, Any] = {"plural": plural, "kind": kind}
    if short:
        names["shortNames"] = short
    if singular:
        names["singular"] = singular
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": CRD,
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True},
                {"name": "v1alpha1", "served": False, "storage": False},
            ],
        },
    }


def _sim(profile: str = "kind") -> Simulation:
    sim = Simulation(load_profile(profile))
    CRDController(sim)
    return sim


def _cond(sim: Simulation, name: str, type_: str) -> tuple[str, str, str] | None:
    crd = sim.store.get(CRD, "", name)
    assert crd is not None
    c = condition(crd, type_)
    return None if c is None else (c["status"], c["reason"], c["message"])


def test_created_crd_is_accepted_then_established_after_latency() -> None:
    sim = _sim()
    sim.store.create(_crd("widgets", "Widget"), actor="helm")
    sim.run(until=0.06)
    assert _cond(sim, "widgets.example.com", "NamesAccepted") == (
        "True",
        "NoConflicts",
        "no conflicts found",
    )
    assert _cond(sim, "widgets.example.com", "Established") == (
        "False",
        "Installing",
        "the initial names have been accepted",
    )
    assert ("example.com/v1", "Widget") not in served_kinds(sim)
    sim.run(until=1.06)
    assert _cond(sim, "widgets.example.com", "Established") == (
        "True",
        "InitialNamesAccepted",
        "the initial names have been accepted",
    )
    served = served_kinds(sim)
    assert served[("example.com/v1", "Widget")] == "Namespaced"
    assert ("example.com/v1alpha1", "Widget") not in served  # not a served version
    established = sim.trace.find(what="status", obj=f"{CRD}/widgets.example.com")
    assert [(round(e.time, 2), e.actor) for e in established] == [
        (0.05, "apiextensions-controller"),
        (1.05, "apiextensions-controller"),
    ]
    accepted = sim.store.get(CRD, "", "widgets.example.com")["status"]["acceptedNames"]  # type: ignore[index]
    assert accepted == {
        "plural": "widgets",
        "kind": "Widget",
        "singular": "widget",
        "listKind": "WidgetList",
    }


def test_kind_conflict_in_the_same_group_is_not_accepted_until_freed() -> None:
    sim = _sim()
    sim.store.create(_crd("widgets", "Widget"), actor="helm")
    sim.run(until=2)
    sim.store.create(_crd("gadgets", "Widget"), actor="helm")
    sim.run(until=5)
    # calculateNamesAndConditions checks kind, then listKind; the last conflict found is reported
    assert _cond(sim, "gadgets.example.com", "NamesAccepted") == (
        "False",
        "ListKindConflict",
        '"WidgetList" is already in use',
    )
    assert _cond(sim, "gadgets.example.com", "Established") == (
        "False",
        "NotAccepted",
        "not all names are accepted",
    )
    # the same kind in another group does not conflict
    sim.store.create(_crd("widgets", "Widget", group="other.example.org"), actor="helm")
    sim.run(until=7)
    assert _cond(sim, "widgets.other.example.org", "Established")[0] == "True"  # type: ignore[index]
    sim.store.delete(CRD, None, "widgets.example.com", actor="helm")  # t = 7
    sim.run(until=9)
    assert _cond(sim, "gadgets.example.com", "NamesAccepted") == (
        "True",
        "NoConflicts",
        "no conflicts found",
    )
    assert _cond(sim, "gadgets.example.com", "Established")[0] == "True"  # type: ignore[index]


def test_short_name_and_singular_conflicts() -> None:
    sim = _sim()
    sim.store.create(_crd("widgets", "Widget", short=["wd"]), actor="helm")
    sim.run(until=2)
    sim.store.create(_crd("wodgets", "Wodget", short=["wd", "wg"]), actor="helm")
    sim.store.create(_crd("things", "Thing", singular="widget"), actor="helm")
    sim.store.create(_crd("doodads", "Doodad", short=["wd", "widgets"]), actor="helm")
    sim.run(until=4)
    assert _cond(sim, "wodgets.example.com", "NamesAccepted") == (
        "False",
        "ShortNamesConflict",
        '"wd" is already in use',
    )
    assert _cond(sim, "things.example.com", "NamesAccepted") == (
        "False",
        "SingularConflict",
        '"widget" is already in use',
    )
    # several short-name conflicts aggregate as "[a, b]" (k8s.io/apimachinery utilerrors.NewAggregate)
    assert _cond(sim, "doodads.example.com", "NamesAccepted") == (
        "False",
        "ShortNamesConflict",
        '["wd" is already in use, "widgets" is already in use]',
    )


def test_profile_crds_are_seeded_established() -> None:
    sim = Simulation(load_profile("eks-gp3"))
    install_crds(sim)
    sim.run(until=1)
    names = sorted(c["metadata"]["name"] for c in sim.store.list(CRD))
    assert names == [
        "cninodes.vpcresources.k8s.aws",
        "eniconfigs.crd.k8s.amazonaws.com",
        "policyendpoints.networking.k8s.aws",
        "securitygrouppolicies.vpcresources.k8s.aws",
    ]
    assert _cond(sim, "eniconfigs.crd.k8s.amazonaws.com", "Established")[0] == "True"  # type: ignore[index]
    assert served_kinds(sim)[("crd.k8s.amazonaws.com/v1alpha1", "ENIConfig")] == "Cluster"
    # the controller leaves already-accepted CRDs alone
    assert sim.trace.find(what="status") == []
