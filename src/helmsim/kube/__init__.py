"""Kubernetes basics written once (one small typed module per basic)."""
