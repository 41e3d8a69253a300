"""Hostile inputs end promptly: time to the limit's message, and the alias-heavy profile merge.

Prints, for each input of issue 12, how long helmsim takes to refuse it (or, for the profile, to
load it), in-process: plan of 100,000 objects, a 50 MB manifest, YAML nested 1,200 levels, and a 406-byte profile whose aliases expand to ~80,000 nodes
(the extends merge was quadratic: minutes). ``tpl`` recursion is timed through the CLI with the
default --max-render-memory (the render worker's watchdog).
Run: .venv/bin/python benchmarks/input_limits.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from helmsim import yamlio  # noqa: E402
from helmsim.cluster.profile import load_profile  # noqa: E402
from helmsim.errors import InputError  # noqa: E402
from helmsim.manifests import parse_documents, read_manifest_input  # noqa: E402

PROFILE = (
    "name: p\nnodes: [{name: a}]\nclusterPolicies:\n"
    "- a: &a [1,1,1,1,1,1,1,1,1,1]\n  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "- e: [*d, *d, *d, *d, *d, *d, *d, *d]\n"
)


def timed(label: str, fn: object) -> None:
    start = time.perf_counter()
    try:
        fn()  # type: ignore[operator]
        outcome = "loaded"
    except InputError as err:
        outcome = str(err).split(": ", 1)[-1][:90]
    print(f"{label:<34} {1000 * (time.perf_counter() - start):9.1f} ms  {outcome}")


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    many = tmp / "many.yaml"
    many.write_text("".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n" for i in range(100_000)))
    big = tmp / "big.yaml"
    big.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  a: " + "x" * 50_000_000 + "\n")
    profile = tmp / "aliases.yaml"
    profile.write_text(PROFILE)
    timed("plan input of 100,000 objects", lambda: parse_documents(read_manifest_input(str(many))))
    timed("a 50 MB manifest", lambda: read_manifest_input(str(big)))
    timed("YAML nested 1,200 levels", lambda: yamlio.load_one("a: " + "[" * 1200 + "]" * 1200, "deep.yaml"))
    timed(f"profile of {len(PROFILE)} bytes, ~80k nodes", lambda: load_profile(str(profile)))
    chart = tmp / "tplrec"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tplrec\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("loop: '{{ tpl .Values.loop . }}'\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ tpl .Values.loop . | quote }}\n"
    )
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "helmsim", "render", str(chart)], capture_output=True, text=True, check=False)
    print(f"{'tpl calling itself (render, CLI)':<34} {1000 * (time.perf_counter() - start):9.1f} ms  exit {proc.returncode}: {proc.stderr.strip()[:90]}")


if __name__ == "__main__":
    main()
