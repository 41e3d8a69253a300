"""What a client prints when its connection is denied.

Cilium's default ``--policy-deny-response=none`` silently drops denied packets, so clients time
out rather than being refused (cilium Documentation/security/policy/intro.rst "Policy Deny
Response Handling"); NetworkPolicy implementations generally drop too. Go clients then report:

* ``dial tcp 10.96.0.1:443: i/o timeout`` — observed e.g. in kubernetes-retired/dashboard#4442
  (``panic: Get https://10.96.0.1:443/...: dial tcp 10.96.0.1:443: i/o timeout``),
  kubermatic/kubermatic#12874 and KBVE/kbve#14223; kubectl prefixes
  ``Unable to connect to the server: ``.
* ``lookup <name> on 10.96.0.10:53: read udp <src>:<port>->10.96.0.10:53: i/o timeout`` for a
  dropped DNS query (Go net.DNSError "lookup %s on %s: %s"; the inner text as observed in
  kubernetes/kubernetes#86762 and cilium/cilium#34290).
* ``lookup <name> on 10.96.0.10:53: server misbehaving`` when Cilium's DNS proxy answers REFUSED
  (golang/go src/net/dnsclient_unix.go checkHeader: any rcode other than success, NXDOMAIN or
  SERVFAIL is errServerMisbehaving).
"""

from __future__ import annotations

from helmsim.cluster.network.model import Verdict

# Placeholders for the client's own address: deterministic unless the caller passes real ones.
DEFAULT_SOURCE_IP = "10.244.0.100"
DEFAULT_SOURCE_PORT = 40000


def client_error_text(
    verdict: Verdict,
    *,
    source_ip: str = DEFAULT_SOURCE_IP,
    source_port: int = DEFAULT_SOURCE_PORT,
    kubectl: bool = False,
) -> str:
    """The error line a Go client (or kubectl) prints for a denied connection.

    Raises ValueError for an allowed verdict.
    """
    if verdict.allowed:
        raise ValueError("the connection is allowed; there is no client error")
    proto = verdict.protocol.lower()
    if verdict.lookup is not None:
        if verdict.cause == "dns-refused":
            return f"lookup {verdict.lookup} on {verdict.dial}: server misbehaving"
        if verdict.cause == "not-found":
            return f"lookup {verdict.lookup} on {verdict.dial}: no such host"
        if proto == "udp":
            inner = f"read udp {source_ip}:{source_port}->{verdict.dial}: i/o timeout"
        else:
            inner = f"dial tcp {verdict.dial}: i/o timeout"
        return f"lookup {verdict.lookup} on {verdict.dial}: {inner}"
    if proto == "udp":
        # UDP has no handshake: the failure surfaces on the first read.
        text = f"read udp {source_ip}:{source_port}->{verdict.dial}: i/o timeout"
    else:
        text = f"dial {proto} {verdict.dial}: i/o timeout"
    return f"Unable to connect to the server: {text}" if kubectl else text
