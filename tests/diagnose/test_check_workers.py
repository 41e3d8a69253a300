"""A check's profiles and fixed runs on worker processes give the report one process gives
(helmsim.diagnose.profilepass): the same findings, chains, fix verdicts and outcomes, in every
output format, whatever ran where."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, CheckReport, run_check
from helmsim.diagnose.profilepass import PARALLEL_MIN_OBJECTS, workers_for
from helmsim.release_inputs import build_inputs
from helmsim.report import findings as text_report
from helmsim.report import sarif

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
MATRIX = ("kind", "cilium-default", "cilium-always", "eks-gp3")


@cache
def _report(workers: int) -> CheckReport:
    releases = build_inputs(str(SEED1), helmrelease=[str(SEED1 / "flux")])
    return run_check(releases, [load_profile(p) for p in MATRIX], options=CheckOptions(workers=workers))


def test_workers_give_the_report_one_process_gives() -> None:
    one, two = _report(1), _report(2)
    assert one.findings and any(fx.checks for f in one.findings for fx in f.fixes)  # fixes were verified
    assert text_report.to_json(one, fail_on="error") == text_report.to_json(two, fail_on="error")
    assert sarif.to_json(one, base=ROOT) == sarif.to_json(two, base=ROOT)
    assert [(k, o.outcome, o.message) for k, o in one.outcomes.items()] == [
        (k, o.outcome, o.message) for k, o in two.outcomes.items()
    ]


def test_a_run_from_a_worker_carries_its_trace_not_the_live_simulation() -> None:
    for name, result in _report(2).runs.items():
        assert result.sim is None and result.trace, name
    assert all(r.sim is not None for r in _report(1).runs.values())


@pytest.mark.parametrize(
    ("objects", "passes", "given", "expected"),
    [
        (PARALLEL_MIN_OBJECTS - 1, 4, None, 1),  # small: workers cost more than they save
        (10 * PARALLEL_MIN_OBJECTS, 1, None, 1),  # one pass: nothing to share
        (10 * PARALLEL_MIN_OBJECTS, 4, 3, 3),
        (0, 4, 2, 2),  # asked for: used whatever the size
        (0, 2, 8, 2),  # never more processes than passes
    ],
)
def test_how_many_workers(objects: int, passes: int, given: int | None, expected: int) -> None:
    assert workers_for(objects, passes, given) == expected


def test_the_collector_is_on_again_after_a_check_on_workers() -> None:
    import gc

    assert gc.isenabled()
    _report(2)
    assert gc.isenabled()  # paused only while the workers' runs came back
