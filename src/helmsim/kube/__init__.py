"""Kubernetes basics written once (one small typed module per basic).

``nulls`` (null map entries), ``quantity`` (resource quantities), ``requests`` (a pod's effective
resource requests), ``gotime`` (Go's ``time.Duration`` as Go prints it), ``scope`` (the
cluster-scoped kinds), ``addresses`` (kubeadm's well-known addresses, the defaults of a profile's
``addressing``; read through ``helmsim.cluster.profile.addressing_of``).
"""
