"""A check renders each chart once per distinct set of capabilities, and checks a fix that
changes only what Helm's engine does not read (a HelmRelease's timeout) on the charts it
already rendered: the report is the one rendering again gives (helmsim.diagnose.check)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helmsim.cluster.profile import load_profile
from helmsim.diagnose import check as checking
from helmsim.diagnose import runner
from helmsim.diagnose.check import CheckOptions, CheckReport, run_check
from helmsim.diagnose.fixes import FixTransform
from helmsim.release_inputs import build_inputs
from helmsim.report import findings as text_report
from helmsim.simulate import ReleaseInput, render_key

HS110 = Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "HS110" / "failing"
MATRIX = ("kind", "cilium-default", "cilium-always")


def _releases(name: str = "hs110") -> list[ReleaseInput]:
    return build_inputs(str(HS110), release_name=name)


class _Counted:
    """A function that counts its calls."""

    def __init__(self, real: Callable[..., Any]) -> None:
        self.real, self.calls = real, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.real(*args, **kwargs)


def _check(monkeypatch: pytest.MonkeyPatch) -> tuple[CheckReport, int]:
    counted = _Counted(runner.render_all)
    monkeypatch.setattr(runner, "render_all", counted)
    monkeypatch.setattr(checking, "render_all", counted)
    report = run_check(_releases(), [load_profile(p) for p in MATRIX], options=CheckOptions(workers=1))
    return report, counted.calls


def test_profiles_with_the_same_capabilities_share_one_render() -> None:
    releases = _releases()
    keys = {name: render_key(load_profile(name), releases) for name in MATRIX}
    assert keys["cilium-default"] == keys["cilium-always"]  # the same Kubernetes, the same API set
    assert keys["kind"] != keys["cilium-default"]  # kind serves no Cilium API


def test_a_timeout_fix_is_checked_on_the_charts_already_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    report, renders = _check(monkeypatch)
    timeout_fixes = [fx for f in report.findings if f.rule == "HS110" for fx in f.fixes if fx.checks]
    assert timeout_fixes, "HS110's timeout fix was re-simulated"
    assert all(c.converges for fx in timeout_fixes for c in fx.checks)
    assert renders == 2  # kind, and the two Cilium profiles together: no render for the fixes


def test_the_report_is_the_one_rendering_again_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    reused, renders = _check(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(FixTransform, "renders_anew", property(lambda self: True))
        again, more = _check(m)
    assert more > renders  # the fixed runs rendered their charts again
    assert text_report.to_json(reused, fail_on="error") == text_report.to_json(again, fail_on="error")


def test_the_same_rendered_files_are_post_rendered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import helmsim.simulate as simulating

    counted = _Counted(simulating.post_render)
    monkeypatch.setattr(simulating, "post_render", counted)
    monkeypatch.setattr(simulating, "_POST_RENDERED", {})
    releases = _releases()
    # kind and cilium-default serve other API versions (two renders by Helm's engine) but this
    # chart reads none of them: the same files, post-rendered once, the same objects
    kind = simulating.prepare_charts(load_profile("kind"), releases)
    cilium = simulating.prepare_charts(load_profile("cilium-default"), releases)
    assert counted.calls == 1
    assert [r.body for r in kind[0]["default/hs110"].resources] == [r.body for r in cilium[0]["default/hs110"].resources]
    other = _releases("other")
    simulating.prepare_charts(load_profile("kind"), other)  # another release: its own post-render
    assert counted.calls == 2
