"""Shared inputs of the explain tests (a uniquely named module: pytest puts each test directory on sys.path): the seeds' charts and the observation files of examples/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
SEED2 = ROOT / "examples" / "seed2-hf-cache"
EXAMPLES = ROOT / "examples" / "explain"
SEED1_ARGS = [
    str(SEED1),
    "--helmrelease", str(SEED1 / "flux" / "agent-platform-connectivity.yaml"),
    "-f", str(EXAMPLES / "seed1-rollout-values.yaml"),
    "--upgrade-from", str(SEED1),
    "--upgrade-from-values", str(SEED1 / "ci" / "previous-values.yaml"),
    "-p", "capa-cilium",
    "-O", str(EXAMPLES / "seed1-incident.observation.yaml"),
]
SEED2_ARGS = [str(SEED2), "--helmrelease", str(SEED2 / "flux"), "-O", str(EXAMPLES / "seed2-incident.observation.yaml")]
