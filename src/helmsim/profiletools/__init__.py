"""Profiles from real clusters: import (dumps or a live cluster), calibration, diff.

``dumps`` reads ``kubectl get -o yaml|json`` files, ``live`` reads the same objects through the
``kubernetes`` client (read-only), ``detect`` turns the objects into a profile whose values carry
their provenance, ``emit`` writes it as commented YAML, ``calibrate`` fits latency distributions
from the cluster's events, and ``compare`` diffs two profiles. docs/profiles.md describes them.
"""
