"""Parse the short target syntax used in ``helmsim.dev/needs`` and scenarios.

===========================================  =============================================
``kube-apiserver``                           the API server (via 10.96.0.1:443)
``dns``, ``dns/tcp``                         kube-dns, UDP (default) or TCP 53
``service:NS/NAME:PORT``                     a Service port (number or name)
``NAME.NS.svc[.cluster.local]:PORT``         the same, by DNS name (looked up first)
``pods:NS/k=v,k2=v2:PORT[/PROTO]``           pods by labels (``*`` for any namespace)
``world[:PORT]``                             some external address (default port 443)
``IP:PORT[/PROTO]``, ``CIDR:PORT[/PROTO]``   an address, or every address of a CIDR
``HOST:PORT[/PROTO]``                        an external name, e.g. ``api.github.com:443``
===========================================  =============================================
"""

from __future__ import annotations

import ipaddress

from helmsim.cluster.network.model import (
    Dns,
    FqdnTarget,
    IpTarget,
    KubeApiServer,
    PodsTarget,
    ServiceTarget,
    Target,
    World,
    normalize_protocol,
)
from helmsim.errors import InputError


def _port(text: str, where: str) -> tuple[int, str]:
    port, _, proto = text.partition("/")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise InputError(f"{where}: {port!r} is not a port number")
    try:
        return int(port), normalize_protocol(proto or "TCP")
    except InputError as e:
        raise InputError(f"{where}: {e.message}") from None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_network(host, strict=False)
        return True
    except ValueError:
        return False


def parse_target(text: str) -> Target:
    """Parse one target; raise InputError naming the bad text."""
    raw = text.strip()
    where = f"target {text!r}"
    low = raw.lower()
    if low in ("kube-apiserver", "apiserver", "kubernetes"):
        return KubeApiServer()
    if low in ("dns", "kube-dns", "dns/udp"):
        return Dns("UDP")
    if low == "dns/tcp":
        return Dns("TCP")
    if low == "world":
        return World()
    if low.startswith("world:"):
        port, proto = _port(raw[6:], where)
        return World(port, proto)
    if low.startswith("service:"):
        ref, _, port_text = raw[8:].rpartition(":")
        ns, _, name = ref.partition("/")
        if not ns or not name or not port_text:
            raise InputError(f"{where}: expected service:NAMESPACE/NAME:PORT")
        return ServiceTarget(ns, name, int(port_text) if port_text.isdigit() else port_text)
    if low.startswith("pods:"):
        ref, _, port_text = raw[5:].rpartition(":")
        ns, _, sel = ref.partition("/")
        if not ns or not port_text:
            raise InputError(f"{where}: expected pods:NAMESPACE/k=v,...:PORT")
        labels = {}
        for pair in filter(None, sel.split(",")):
            k, eq, v = pair.partition("=")
            if not eq or not k:
                raise InputError(f"{where}: label {pair!r} is not key=value")
            labels[k] = v
        p, _, proto = port_text.partition("/")
        return PodsTarget(
            None if ns == "*" else ns,
            labels,
            int(p) if p.isdigit() else p,
            normalize_protocol(proto or "TCP"),
        )
    host, sep, port_text = raw.rpartition(":")
    if not sep or not host:
        raise InputError(
            f"{where}: expected HOST:PORT, an address with a port, or a keyword "
            "(kube-apiserver, dns, world)"
        )
    port, proto = _port(port_text, where)
    host = host.strip("[]")
    if _is_address(host):
        return IpTarget(host, port, proto)
    # In-cluster names (NAME.NS.svc...) stay names: the lookup through kube-dns is part of the
    # connection, and evaluate() resolves them to the Service afterwards.
    return FqdnTarget(host, port, proto)
