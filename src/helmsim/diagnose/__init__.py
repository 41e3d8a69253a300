"""Diagnose simulations: rules over the trace, findings with causal chains, verified fixes.

``helmsim.diagnose.check.run_check`` is the entry point (``helmsim check``); rules live in
``helmsim.diagnose.rules`` (one module per family) and register in ``helmsim.diagnose.registry``;
docs/check.md and docs/rules/ describe them.
"""
