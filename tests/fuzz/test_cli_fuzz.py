"""The ``helmsim`` CLI on generated broken input: exit 0, 1 or 2 only, exit 2 with one line.

Most cases call the CLI's entry point in-process (the same ``main`` the script runs); a few run
``python -m helmsim`` in a real subprocess, where stderr is what a user sees.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
from pathlib import Path

from fuzz_inputs_helpers import (
    CASES,
    ROOT,
    batches,
    check_exit,
    cli_exits_cleanly,
    encode,
    fuzz_settings,
    manifest_seeds,
    random_text,
    seeds,
    yaml_text,
)
from hypothesis import given
from hypothesis import strategies as st

_DIR = Path(tempfile.mkdtemp(prefix="helmsim-cli-fuzz-"))
MANIFESTS = manifest_seeds()
OBJECTS = seeds("objects")
PROFILES = seeds("profile")
VALUES = seeds("values")
HELMRELEASES = seeds("helmrelease")
SEED2 = ROOT / "examples" / "seed2-hf-cache"


def _file(name: str, text: str) -> str:
    path = _DIR / name
    path.write_bytes(encode(text))
    return str(path)


@fuzz_settings(30, deadline_s=10)
@given(batches(MANIFESTS, size=3))
def test_plan_of_broken_manifests(texts: list[str]) -> None:
    for text in texts:
        cli_exits_cleanly(["plan", _file("manifest.yaml", text), "--format", "json"])


@fuzz_settings(30, deadline_s=10)
@given(batches(OBJECTS, size=3))
def test_status_of_broken_saved_objects(texts: list[str]) -> None:
    for i, text in enumerate(texts):
        cli_exits_cleanly(["status", _file(f"objects{i}.yaml", text), "--now", "2026-01-01T00:01:00Z"])


@fuzz_settings(40, deadline_s=10)
@given(yaml_text(PROFILES))
def test_profiles_show_of_broken_profiles(text: str) -> None:
    cli_exits_cleanly(["profiles", "show", _file("profile.yaml", text)])


@fuzz_settings(40, deadline_s=10)
@given(yaml_text(VALUES))
def test_render_with_broken_values(text: str) -> None:
    cli_exits_cleanly(["render", str(SEED2), "-f", _file("values.yaml", text)])


@fuzz_settings(12, deadline_s=30)
@given(yaml_text(HELMRELEASES))
def test_simulate_with_broken_helmreleases(text: str) -> None:
    # a HelmRelease valid enough to simulate runs the whole simulation: few, slow cases
    cli_exits_cleanly(["simulate", str(SEED2), "--helmrelease", _file("hr.yaml", text), "--horizon", "10m"])


@fuzz_settings(15, deadline_s=60)
@given(yaml_text(MANIFESTS))
def test_simulate_of_broken_manifests(text: str) -> None:
    """A chart whose template is a broken manifest, simulated: Helm's engine, the plan, the
    controllers (mistyped fields are the manifest validation's to refuse, exit 1 or 2)."""
    chart = _DIR / "chart"
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: fuzzed\nversion: 0.1.0\n")
    (chart / "templates" / "all.yaml").write_bytes(encode(text.replace("{{", "{ {")))
    cli_exits_cleanly(["simulate", str(chart), "--horizon", "10m"])


_SUBPROCESS_READERS = [
    ("plan", MANIFESTS, lambda f: ["plan", f]),
    ("status", OBJECTS, lambda f: ["status", f]),
    ("profiles", PROFILES, lambda f: ["profiles", "show", f]),
    ("render", VALUES, lambda f: ["render", str(SEED2), "-f", f]),
]


@fuzz_settings(1, deadline_s=120)
@given(st.integers(0, 2**32 - 1))
def test_real_subprocesses(seed: int) -> None:
    """One subprocess per reader: stdout/stderr exactly as a shell sees them."""
    rng = random.Random(seed)
    for name, pool, args in _SUBPROCESS_READERS:
        path = _file(f"sub-{name}.yaml", random_text(rng, pool))
        proc = subprocess.run(
            [sys.executable, "-m", "helmsim", *args(path)], capture_output=True, text=True, errors="replace", check=False
        )
        CASES["count"] += 1
        check_exit(proc.returncode, proc.stderr)
