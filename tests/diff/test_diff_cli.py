"""`helmsim diff` end to end on git repositories built in the test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from diffrepo import JOB, Commit, base_chart, git, switch_added
from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
SEED2 = ROOT / "examples" / "seed2-hf-cache"

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["diff", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def _in_repo(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)


def test_identical_renders_exit_0(commit: Commit) -> None:
    commit(base_chart())
    commit({"README.md": "docs only\n"})
    code, out, _ = run("chart", "--against", "HEAD~1")
    assert code == 0, out
    assert "ci/default-values.yaml: identical" in out
    assert "ci/default-other-values.yaml: identical" in out
    assert "2 entries: 2 identical." in out


def test_changed_render_names_object_and_field(commit: Commit) -> None:
    commit(base_chart())
    commit({"chart/ci/default-values.yaml": "image: a:2\n"})
    code, out, _ = run("chart", "--against", "HEAD~1")
    assert code == 1
    assert "ci/default-values.yaml (values file edited since the ref): changed" in out
    assert 'Job/kagent/x: spec.template.spec.containers[0].image: "a:1" → "a:2"' in out
    assert "FAIL: 1 entry differs: ci/default-values.yaml" in out


def test_working_tree_changes_are_compared_and_left_alone(repo: Path, commit: Commit) -> None:
    commit(base_chart())
    (repo / "chart/templates/job.yaml").write_text(
        JOB.replace("backoffLimit: 2", "backoffLimit: 6")
    )
    before = (
        git(repo, "status", "--porcelain"),
        git(repo, "rev-parse", "HEAD"),
        git(repo, "stash", "list"),
    )
    code, out, _ = run("chart", "--against", "HEAD")
    assert code == 1
    assert "Job/kagent/x: spec.backoffLimit: 2 → 6" in out
    after = (
        git(repo, "status", "--porcelain"),
        git(repo, "rev-parse", "HEAD"),
        git(repo, "stash", "list"),
    )
    assert after == before
    assert "backoffLimit: 6" in (repo / "chart/templates/job.yaml").read_text()


def test_done_when_new_switch_file_only_exits_0(commit: Commit) -> None:
    """The issue's acceptance: a new switch and its ci file leave the default renders alone."""
    commit(base_chart())
    commit(switch_added())
    code, out, _ = run("chart", "--against", "HEAD~1", "--expect-identical", "ci/default*.yaml")
    assert code == 0, out
    assert "ci/default-values.yaml: identical  [expected identical]" in out
    assert (
        "ci/switch-values.yaml (new: not at HEAD~1; the same values on both sides): changed" in out
    )
    assert "+ ConfigMap/default/switched (added; demo/templates/switch.yaml)" in out
    assert "OK: nothing that must stay identical changed." in out


def test_done_when_default_render_changed_exits_1_naming_object_and_field(commit: Commit) -> None:
    commit(base_chart())
    commit(
        {
            **switch_added(),
            "chart/templates/job.yaml": JOB.replace(
                "restartPolicy: Never", "restartPolicy: OnFailure"
            ),
        }
    )
    code, out, _ = run("chart", "--against", "HEAD~1", "--expect-identical", "ci/default*.yaml")
    assert code == 1
    assert "ci/default-values.yaml: changed  [expected identical: FAIL]" in out
    assert 'Job/kagent/x: spec.template.spec.restartPolicy: "Never" → "OnFailure"' in out
    assert (
        "FAIL: 2 expected identical entries differ: ci/default-other-values.yaml, ci/default-values.yaml"
        in out
    )


def test_renamed_values_file_is_matched_by_content(commit: Commit) -> None:
    commit(base_chart())
    commit(
        {"chart/ci/default-values.yaml": None, "chart/ci/default-image-values.yaml": "image: a:1\n"}
    )
    code, out, _ = run("chart", "--against", "HEAD~1", "--format", "json")
    assert code == 0
    entries = {e["name"]: e for e in json.loads(out)["entries"]}
    assert entries["ci/default-image-values.yaml"]["origin"] == "renamed"
    assert entries["ci/default-image-values.yaml"]["refName"] == "ci/default-values.yaml"
    assert entries["ci/default-image-values.yaml"]["status"] == "identical"
    assert "ci/default-values.yaml" not in entries


def test_reformatted_rename_is_matched_by_parsed_values(commit: Commit) -> None:
    commit(base_chart())
    commit(
        {
            "chart/ci/default-values.yaml": None,
            "chart/ci/img-values.yaml": "# same values\nimage: 'a:1'\n",
        }
    )
    code, out, _ = run("chart", "--against", "HEAD~1")
    assert code == 0
    assert "ci/img-values.yaml (renamed from ci/default-values.yaml): identical" in out


def test_removed_values_file_renders_its_ref_content_on_both_sides(commit: Commit) -> None:
    commit(base_chart())
    commit(
        {
            "chart/ci/default-other-values.yaml": None,
            "chart/templates/job.yaml": JOB.replace("2", "3"),
        }
    )
    code, out, _ = run(
        "chart", "--against", "HEAD~1", "--expect-identical", "ci/default-other-values.yaml"
    )
    assert code == 1
    assert (
        "ci/default-other-values.yaml (removed: only at HEAD~1; its content there on both sides): changed"
        in out
    )


def test_ref_that_does_not_exist_is_bad_input(commit: Commit) -> None:
    commit(base_chart())
    code, out, err = run("chart", "--against", "no-such-branch")
    assert code == 2 and out == ""
    assert "git ref 'no-such-branch' does not exist in the repository" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_chart_directory_missing_at_ref_is_bad_input(commit: Commit) -> None:
    commit({"README.md": "before the chart\n"})
    commit(base_chart())
    code, _, err = run("chart", "--against", "HEAD~1")
    assert code == 2
    assert "chart directory 'chart' did not exist at HEAD~1" in err and err.count("\n") == 1


def test_not_a_git_repository_is_bad_input(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    (loose / "templates").mkdir(parents=True)
    (loose / "Chart.yaml").write_text("apiVersion: v2\nname: loose\nversion: 0.1.0\n")
    code, _, err = run(str(loose), "--against", "HEAD")
    assert code == 2 and "not inside a git work tree" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--values-matrix", "nothing/*.yaml"], "--values-matrix 'nothing/*.yaml' matches no file"),
        (
            ["--expect-identical", "ci/typo*.yaml"],
            "--expect-identical 'ci/typo*.yaml' matches no matrix entry",
        ),
        (["-f", "missing.yaml"], "missing.yaml: values file not found"),
    ],
)
def test_bad_matrix_arguments_are_bad_input(commit: Commit, args: list[str], message: str) -> None:
    commit(base_chart())
    code, _, err = run("chart", "--against", "HEAD", *args)
    assert code == 2 and message in err


def test_secrets_are_hashed_never_printed(commit: Commit) -> None:
    commit(base_chart())
    commit(
        {
            "chart/ci/default-other-values.yaml": "password: n3w-s3cret\n",
            "chart/templates/cm.yaml": (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n"
                "  apiToken: {{ .Values.password | quote }}\n  mode: plain\n"
            ),
        }
    )
    for fmt in ("text", "json"):
        code, out, _ = run("chart", "--against", "HEAD~1", "--format", fmt)
        assert code == 1
        for secret in ("s3cret-value", "n3w-s3cret", "hunter2"):
            assert secret not in out
    _, out, _ = run("chart", "--against", "HEAD~1")
    assert 'Secret/default/creds: stringData.password: "<redacted:sha256:' in out
    assert "ConfigMap/default/app (added; demo/templates/cm.yaml)" in out


def test_semantic_ignores_pure_formatting(commit: Commit) -> None:
    commit(base_chart())
    reformatted = (
        "# the same Job, written differently\n---\nkind: Job\napiVersion: 'batch/v1'\n"
        'metadata: {namespace: kagent, name: "x"}\nspec:\n  template:\n    spec:\n'
        "      containers:\n      - image: {{ .Values.image | quote }}\n        name: main\n"
        '      restartPolicy: "Never"\n  backoffLimit: 2\n---\n'
    )
    commit({"chart/templates/job.yaml": reformatted})
    code, out, _ = run("chart", "--against", "HEAD~1")
    assert code == 1
    assert "ci/default-values.yaml: formatting only" in out
    code, out, _ = run("chart", "--against", "HEAD~1", "--semantic")
    assert code == 0, out
    assert "only formatting differs" in out


def test_semantic_still_fails_on_a_type_change(commit: Commit) -> None:
    commit(base_chart())
    commit({"chart/templates/job.yaml": JOB.replace("backoffLimit: 2", 'backoffLimit: "2"')})
    code, out, _ = run("chart", "--against", "HEAD~1", "--semantic")
    assert code == 1
    assert 'Job/kagent/x: spec.backoffLimit: 2 → "2"' in out


def test_template_moved_to_another_file_is_formatting(commit: Commit) -> None:
    commit(base_chart())
    commit({"chart/templates/job.yaml": None, "chart/templates/batch/job.yaml": JOB})
    code, out, _ = run("chart", "--against", "HEAD~1", "--semantic")
    assert code == 0
    assert "Job/kagent/x moved from demo/templates/job.yaml to demo/templates/batch/job.yaml" in out


def test_explicit_values_file_and_matrix_replace_the_default(repo: Path, commit: Commit) -> None:
    commit(base_chart())
    (repo / "outside.yaml").write_text("image: b:1\n")
    code, out, _ = run(
        "chart",
        "--against",
        "HEAD",
        "-f",
        "outside.yaml",
        "--values-matrix",
        "values.yaml",
        "--format",
        "json",
    )
    assert code == 0
    report = json.loads(out)
    assert [(e["name"], e["origin"]) for e in report["entries"]] == [
        ("outside.yaml", "new"),
        ("values.yaml", "unchanged"),
    ]


def test_chart_defaults_when_there_is_no_ci_directory(commit: Commit) -> None:
    files = {k: v for k, v in base_chart().items() if "/ci/" not in k}
    commit(files)
    commit({"chart/values.yaml": files["chart/values.yaml"].replace("a:1", "a:3")})  # type: ignore[union-attr]
    code, out, _ = run("chart", "--against", "HEAD~1")
    assert code == 1
    assert "(chart defaults): changed" in out
    assert '"a:1" → "a:3"' in out


def test_rehearse_reports_the_seed2_outcome_change(repo: Path, commit: Commit) -> None:
    """The issue's acceptance: the cache claim moves from a hook Job into the release."""
    shutil.copytree(SEED2, repo / "chart")
    shutil.rmtree(repo / "chart" / "ci")
    values = (repo / "chart/values.yaml").read_text()
    assert "    viaHook: false\n" in values
    commit(
        {"chart/values.yaml": values.replace("    viaHook: false\n", "    viaHook: true\n")},
        "claim via hook",
    )
    commit({"chart/values.yaml": values}, "claim as a release resource")
    code, out, _ = run(
        "chart",
        "--against",
        "HEAD~1",
        "--rehearse",
        "--helmrelease",
        "chart/flux",
        "--release-name",
        "agent-platform-connectivity",
        "-n",
        "agent-platform",
    )
    assert code == 1
    assert "+ PersistentVolumeClaim/model-serving/hf-cache (added;" in out
    assert "- Job/agent-platform/agent-platform-connectivity-model-serving-cache (removed;" in out
    assert (
        "rehearse under kind: HelmRelease agent-platform/agent-platform-connectivity: HEAD~1: Ready; "
        "working tree: Stalled: times out on PersistentVolumeClaim/model-serving/hf-cache"
    ) in out
    assert (
        "HelmRelease agent-platform/substrate: HEAD~1: Ready (not simulated); working tree: Blocked:"
        in out
    )


def test_rehearse_json_and_unchanged_outcome(repo: Path, commit: Commit) -> None:
    shutil.copytree(SEED2, repo / "chart")
    shutil.rmtree(repo / "chart" / "ci")
    commit({}, "seed 2")
    commit(
        {
            "chart/templates/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
        }
    )
    code, out, _ = run(
        "chart",
        "--against",
        "HEAD~1",
        "--rehearse",
        "--helmrelease",
        "chart/flux",
        "--format",
        "json",
    )
    assert code == 1
    entry = json.loads(out)["entries"][0]
    assert [o["ref"] for o in entry["objects"]] == ["ConfigMap/default/extra"]
    (reh,) = entry["rehearsals"]
    assert reh["profile"] == "kind" and reh["changed"] is False
    main = next(
        r for r in reh["releases"] if r["release"] == "agent-platform/agent-platform-connectivity"
    )
    assert (
        main["ref"]
        == main["workingTree"]
        == "Stalled: times out on PersistentVolumeClaim/model-serving/hf-cache"
    )


def test_a_render_failing_on_one_side_is_a_change(commit: Commit) -> None:
    commit(base_chart())
    commit({"chart/templates/broken.yaml": "{{ .Values.image | nosuchfunc }}\n"})
    code, out, _ = run(
        "chart", "--against", "HEAD~1", "--expect-identical", "ci/default-values.yaml"
    )
    assert code == 1
    assert "ci/default-values.yaml: changed  [expected identical: FAIL]" in out
    assert (
        'working-tree render fails: chart/templates/broken.yaml:1: render failed: function "nosuchfunc" not defined'
        in out
    )
    assert "/tmp/" not in out and "helmsim-diff-" not in out


def test_the_same_failure_on_both_sides_is_identical(commit: Commit) -> None:
    chart = base_chart()
    chart["chart/templates/need.yaml"] = '{{ required "set needed" .Values.needed }}\n'
    commit(chart)
    commit({"README.md": "x\n"})
    code, out, _ = run("chart", "--against", "HEAD~1")
    assert code == 0, out
    assert "ci/default-values.yaml: identical" in out
    assert "both sides fail to render:" in out and "set needed" in out


def test_a_bad_values_file_at_the_ref_is_named_by_ref_and_path(commit: Commit) -> None:
    commit({**base_chart(), "chart/ci/default-values.yaml": "image: [a\n"})
    commit({"chart/ci/default-values.yaml": "image: a:1\n"})
    code, out, _ = run("chart", "--against", "HEAD~1")
    assert code == 1
    assert "ref render fails: HEAD~1:ci/default-values.yaml:" in out and "invalid YAML" in out


# --- the upgrade rehearsal (issue 18 item 5) ---------------------------------------------------------
HS105 = Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "HS105"


def test_rehearse_upgrades_the_refs_release_and_reports_an_immutable_field(repo: Path, commit: Commit) -> None:
    """A Job's pod template changes: each side installs fine alone, the upgrade is refused."""
    shutil.copytree(HS105 / "previous", repo / "chart")
    commit({}, "previous")
    shutil.rmtree(repo / "chart")
    shutil.copytree(HS105 / "failing", repo / "chart")
    commit({}, "new image in the Job")
    code, out, _ = run("chart", "--against", "HEAD~1", "--rehearse")
    assert code == 1
    assert '~ Job/default/migrate: spec.template.spec.containers[0].image: "ghcr.io/example/migrate:1.0.0"' in out
    assert "rehearse under kind: predicted outcome unchanged (default/hs105: Ready)" in out
    line = next(ln for ln in out.splitlines() if "upgrade HEAD~1 → working tree" in ln)
    assert line.startswith("  rehearse under kind: upgrade HEAD~1 → working tree: HelmRelease default/hs105: Stalled: ")
    assert "Helm upgrade failed for release default/hs105" in line
    assert "— HS105 immutable-field-change: the upgrade changes an immutable field of Job/default/migrate" in line
    assert out.splitlines()[-1] == "FAIL: the upgrade from HEAD~1 fails for (chart defaults)"
    code, doc_text, _ = run("chart", "--against", "HEAD~1", "--rehearse", "--format", "json")
    [reh] = json.loads(doc_text)["entries"][0]["rehearsals"]
    [rel] = reh["releases"]
    assert reh["upgradeFails"] and rel["upgradeFails"] and rel["ref"] == rel["workingTree"] == "Ready"
    assert rel["upgradeCause"].startswith("HS105 immutable-field-change: the upgrade changes an immutable field of Job/default/migrate")


def test_rehearse_an_upgrade_that_converges(repo: Path, commit: Commit) -> None:
    shutil.copytree(HS105 / "previous", repo / "chart")
    commit({}, "previous")
    commit({"chart/templates/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"})
    code, out, _ = run("chart", "--against", "HEAD~1", "--rehearse")
    assert code == 1 and out.splitlines()[-1] == "FAIL: 1 entry differs: (chart defaults)"
    assert "rehearse under kind: upgrade HEAD~1 → working tree: default/hs105: Ready" in out


def test_check_upgrade_from_ref_reports_the_immutable_field(repo: Path, commit: Commit, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(HS105 / "previous", repo / "chart")
    commit({}, "previous")
    shutil.rmtree(repo / "chart")
    shutil.copytree(HS105 / "failing", repo / "chart")
    commit({}, "new image in the Job")
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(app, ["check", "chart", "-p", "kind", "--upgrade-from-ref", "HEAD~1", "--format", "json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert [f["rule"] for f in doc["findings"]] == ["HS105"]
    assert doc["findings"][0]["object"] == "Job/default/migrate"
    # the same tree against itself: the upgrade changes nothing
    same = CliRunner().invoke(app, ["check", "chart", "-p", "kind", "--upgrade-from-ref", "HEAD", "--format", "json"])
    assert same.exit_code == 0 and json.loads(same.stdout)["findings"] == []
    bad = CliRunner().invoke(app, ["check", "chart", "--upgrade-from-ref", "no-such-ref"])
    assert bad.exit_code == 2 and bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1
    both = CliRunner().invoke(app, ["check", "chart", "--upgrade-from-ref", "HEAD", "--upgrade-from", "chart"])
    assert both.exit_code == 2 and "--upgrade-from-ref and --upgrade-from" in both.stderr
