"""Regenerate cases.yaml: every tree of inputs.yaml built by `kubectl kustomize` (the real
kustomize) in the case's `build` directory, its objects or error recorded as the expected
result (the temporary directory written `<tmp>`). Run it where kubectl is installed:
`python tests/conformance/data/kustomize_trees/generate.py`."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "kustomize"))
from generate import generated_by, kustomize_error, write_cases  # noqa: E402 - the sibling generator's helpers


def run(files: dict[str, str], build: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        done = subprocess.run(["kubectl", "kustomize", str(root / build)], capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return {"objects": list(yaml.safe_load_all(done.stdout))}
    return {"error": kustomize_error(done.stderr).replace(str(root), "<tmp>")}


def main() -> int:
    data = yaml.safe_load((HERE / "inputs.yaml").read_text())
    out = {"generatedBy": generated_by(), "cases": []}
    for case in data["cases"]:
        out["cases"].append({**case, "expected": run(case["files"], case["build"])})
    return write_cases(HERE, out)


if __name__ == "__main__":
    sys.exit(main())
