"""``helmsim explain``: which modelled faults and latencies reproduce what a real cluster showed.

Public API::

    from helmsim.explain import explain, Options, load_observation
    ex = explain(release_inputs, profile, load_observation("observed.yaml"), Options(runs=10))
    ex.reproducing   # Verdicts, most probable first (hypothesis, probability, causal chain)
    ex.ruled_out     # Verdicts with the reason in trace terms
    ex.fixes         # FixVerdicts: converges under which reproducing hypotheses

docs/explain.md documents the observation schema, the hypothesis families and their priors.
"""

from helmsim.explain.observation import LoadedObservation, Observation, load_observation
from helmsim.explain.search import Explanation, FixVerdict, Options, Verdict, explain

__all__ = [
    "Explanation",
    "FixVerdict",
    "LoadedObservation",
    "Observation",
    "Options",
    "Verdict",
    "explain",
    "load_observation",
]
