"""Kubernetes basics written once (one small typed module per basic).

``nulls`` (null map entries), ``quantity`` (resource quantities), ``requests`` (a pod's effective
resource requests).
"""
