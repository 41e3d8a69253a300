"""Suite-wide settings.

pytest-xdist's workers are started through execnet, which sets ``COLUMNS=80`` and ``LINES=24`` in
their environment. helmsim's consoles read ``COLUMNS`` (a set value means "wrap at that width"), so
under ``-n`` the text reports would wrap at 80 columns where a plain ``pytest`` run (no terminal, no
``COLUMNS``) gets the 160-column non-terminal default. Drop what execnet set, before any test module
imports the CLI, so a test sees the same environment with and without ``-n``; tests that need a width
pass ``COLUMNS`` themselves.
"""

from __future__ import annotations

import os

if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)
