"""A compiled set of policies in effect: parse the manifests once, evaluate many connections."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct

from helmsim.cluster.network import cilium, kubernetes
from helmsim.cluster.network.cilium import CiliumPolicy  # the field ``cilium`` hides the module in the class
from helmsim.cluster.network.flows import CidrBlock, Peer
from helmsim.errors import InputError

POLICY_KINDS = {
    ("networking.k8s.io/v1", kubernetes.KIND),
    ("cilium.io/v2", cilium.CNP),
    ("cilium.io/v2", cilium.CCNP),
}


class PolicySet(Struct, frozen=True, eq=False, dict=True):
    """NetworkPolicies and Cilium rules, compiled. Build with :meth:`from_manifests`."""

    k8s: tuple[kubernetes.NetworkPolicy, ...] = ()
    cilium: tuple[CiliumPolicy, ...] = ()

    def __post_init__(self) -> None:
        # Which policies select a pod is asked on every connection: memoise it per pod object
        # (pods hash by identity) and namespace labels, the only inputs of selection.
        self.__dict__["_sel_cache"] = {}

    def selecting(
        self, peer: Peer
    ) -> tuple[tuple[CiliumPolicy, ...], tuple[kubernetes.NetworkPolicy, ...]]:
        """The Cilium rules and NetworkPolicies whose subject selector selects ``peer``."""
        if peer.pod is None:
            return (), ()
        cache: dict[Any, Any] = self._sel_cache  # type: ignore[attr-defined]
        key = (peer.pod, tuple(peer.ns_labels.items()))
        got = cache.get(key)
        if got is None:
            got = cache[key] = (
                tuple(p for p in self.cilium if p.selects(peer)),
                tuple(p for p in self.k8s if p.selects(peer)),
            )
        return got

    @classmethod
    def from_manifests(cls, docs: Iterable[Mapping[str, Any]]) -> PolicySet:
        """Compile policy manifests (plain dicts); documents of other kinds are skipped.

        Raises InputError naming the policy when a policy is malformed.
        """
        k8s: list[kubernetes.NetworkPolicy] = []
        cil: list[cilium.CiliumPolicy] = []
        for doc in docs:
            if not isinstance(doc, Mapping):
                raise InputError(f"a policy must be a mapping, got {type(doc).__name__}")
            kind = doc.get("kind")
            if kind == kubernetes.KIND:
                k8s.append(kubernetes.compile_network_policy(doc))
            elif kind in (cilium.CNP, cilium.CCNP):
                cil.extend(cilium.compile_cilium_policy(doc))
        return cls(tuple(k8s), tuple(cil))

    def cidr_blocks(self) -> tuple[CidrBlock, ...]:
        """Every CIDR any policy names (to find the addresses where a verdict can change)."""
        out: list[CidrBlock] = []
        for np in self.k8s:
            for rule in np.ingress + np.egress:
                out.extend(p.ip_block for p in rule.peers if p.ip_block is not None)
        for cp in self.cilium:
            for crule in cp.ingress + cp.ingress_deny + cp.egress + cp.egress_deny:
                out.extend(crule.cidrs or ())
        return tuple(out)

    def __len__(self) -> int:
        return len(self.k8s) + len({p.id for p in self.cilium})


def as_policy_set(policies: PolicySet | Iterable[Mapping[str, Any]]) -> PolicySet:
    return policies if isinstance(policies, PolicySet) else PolicySet.from_manifests(policies)
