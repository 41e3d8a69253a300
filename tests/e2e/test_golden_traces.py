"""The engine's traces on the examples do not change by accident (issue 15).

Each scenario's full trace (every event: id, time, actor, what, object, message, cause, data)
is hashed and compared with tests/data/golden_traces.json. Speed-ups of the engine (indexes,
caches, fewer copies) must leave it byte-identical. A change that means to alter what the
simulation does regenerates the file on purpose and says why in its commit:

    HELMSIM_UPDATE_GOLDEN=1 python -m pytest tests/e2e/test_golden_traces.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from e2e_helpers import MIGRATE_FAILS, ROOT, SEED1, SEED2, run_example

from helmsim.cluster.profile import load_profile
from helmsim.cluster.trace import TraceEvent
from helmsim.flux.inputs import default_helmrelease
from helmsim.simulate import ChartSource, ReleaseInput, SimulationResult, simulate

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden_traces.json"
PREVIOUS = [SEED1 / "ci" / "previous-values.yaml"]
BLOCKS = ROOT / "tests" / "fixtures" / "charts" / "blocks"


def _blocks(profile: str) -> SimulationResult:
    """Many Services, pods and policies in one namespace (the indexes' and caches' workload)."""
    return simulate(load_profile(profile), [ReleaseInput(default_helmrelease("blocks", "blocks"), ChartSource(str(BLOCKS)))])


SCENARIOS = {
    "seed1 cilium-always install": lambda: run_example(SEED1, "cilium-always"),
    "seed1 cilium-default install": lambda: run_example(SEED1, "cilium-default"),
    "seed1 migrate fails, upgrade": lambda: run_example(
        SEED1, "cilium-always", [MIGRATE_FAILS], upgrade_from_values=PREVIOUS
    ),
    "seed1 post-upgrade hook fails": lambda: run_example(
        SEED1,
        "cilium-always",
        [SEED1 / "ci" / "post-upgrade-hook-values.yaml", MIGRATE_FAILS],
        upgrade_from_values=PREVIOUS,
    ),
    "seed2 kind": lambda: run_example(SEED2, "kind"),
    "seed2 eks-gp3 hook fix": lambda: run_example(SEED2, "eks-gp3", [SEED2 / "ci" / "hook-values.yaml"]),
    "blocks kind": lambda: _blocks("kind"),
    "blocks cilium-always": lambda: _blocks("cilium-always"),
}


def trace_lines(trace: list[TraceEvent]) -> list[str]:
    """One canonical JSON line per event."""
    return [json.dumps(e.to_dict(), sort_keys=True, default=str, ensure_ascii=False) for e in trace]


def digest(trace: list[TraceEvent]) -> dict[str, object]:
    lines = trace_lines(trace)
    return {"events": len(lines), "sha256": hashlib.sha256("\n".join(lines).encode()).hexdigest()}


def _golden() -> dict[str, dict[str, object]]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_trace_is_the_golden_one(name: str) -> None:
    got = digest(list(SCENARIOS[name]().trace))
    if os.environ.get("HELMSIM_UPDATE_GOLDEN"):
        golden = _golden()
        golden[name] = got
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=2) + "\n")
        return
    assert _golden().get(name) == got, (
        f"the trace of {name!r} changed; if the simulation is meant to behave differently, "
        "regenerate with HELMSIM_UPDATE_GOLDEN=1 (see this module's docstring)"
    )
