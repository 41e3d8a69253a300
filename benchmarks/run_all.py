"""Run every benchmark script in this directory, one after another."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

for script in sorted(HERE.glob("*.py")):
    if script.name == "run_all.py":
        continue
    print(f"== {script.name}", flush=True)
    subprocess.run([sys.executable, str(script)], check=True)
