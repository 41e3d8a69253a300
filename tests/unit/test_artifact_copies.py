"""helmsim.flux.artifacts.materialize against the copy-semantics tables of Flux source-watcher's
builder tests, ported as data.

Upstream: fluxcd/source-watcher at 825fa15baf96858578d8dd0ed3c75ff7a75f01ce,
internal/builder/builder_test.go (``TestBuild``, ``TestBuildErrors``, ``TestBuildWithExcludes``),
semantics in internal/builder/builder.go (``applyCopyOperation`` and what it calls). Each case
below names the upstream ``Test…/<case name>`` it is ported from.

How the port maps upstream onto helmsim:

* Upstream's ``sources`` map gives each alias its own directory. ``materialize`` reads every
  ``GitRepository`` alias from the same ``repository_root``, so a case with several aliases puts
  each alias's files under a subdirectory of the root named after the alias and prefixes its
  ``from`` paths with that subdirectory (said again at each such case). A single-alias case uses
  the root as the alias's directory, as upstream does.
* Expected contents are the artifact's whole file set, checked exactly. Upstream's
  ``verifyContents`` (suite_test.go) and the exclude table's ``BeAnExistingFile`` checks only look
  for the files they list; where upstream's own semantics produce more files than it lists, the
  extra files are added here and the case says so. Upstream's directory assertions
  (``BeADirectory`` / ``ToNot(BeADirectory())``, ``HaveLen(0)`` on the artifact directory) are kept
  as ``dirs`` / ``no_dirs`` / ``empty``.
* Error cases assert upstream's expected error text appears in the ``InputError``'s message.

Not ported (not modelled by helmsim, or not a copy-semantics case):

* the ``Merge`` strategy (merge_test.go ``TestBuild_YAMLMergeStrategy``) and the ``Extract``
  strategy (extract_test.go ``TestBuild_ExtractStrategy``): not modelled;
* ``pathPattern`` (internal/controller/artifactgenerator_pathpattern_test.go): not modelled;
* dirhash_test.go (artifact digests, file names and garbage collection) and the revision check of
  ``TestBuild/build artifact with multiple copy operations``: helmsim produces no archive;
* ``TestBuildErrors/error when staging directory creation fails``: its setup is an unwritable
  workspace (``/nonexistent/workspace``), not files and copy operations.

Upstream has no test for a badly formatted ``from`` / ``to``; the four ``builder.go …`` cases at the
end are derived from ``parseCopySource`` / ``parseCopyDestinationRelative`` and the error wrapping
in ``applyCopyOperation``, and are named after the function they come from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helmsim.errors import InputError
from helmsim.flux.artifacts import materialize

UPSTREAM = "fluxcd/source-watcher@825fa15baf96858578d8dd0ed3c75ff7a75f01ce internal/builder"


@dataclass(frozen=True)
class Case:
    upstream: str
    """``<Go test function>/<t.Run name>`` (or the builder.go function for a derived case)."""
    files: dict[str, str]
    """The source files, relative to the repository root, → content."""
    copy: list[dict[str, Any]]
    artifact: str = "test-artifact"
    aliases: tuple[str, ...] = ("source",)
    expected: dict[str, str] | None = None
    """The artifact's files, relative to its root, → content (exactly these)."""
    error: str | None = None
    """Upstream's expected error text (a substring of the error)."""
    dirs: tuple[str, ...] = ()
    """Directories upstream asserts exist in the artifact."""
    no_dirs: tuple[str, ...] = ()
    """Directories upstream asserts do not exist in the artifact."""
    empty: bool = False
    """Upstream asserts the artifact directory has no entries at all."""
    create_root: bool = True
    """False where upstream never creates the source directory."""


def _op(src: str, to: str, exclude: list[str] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"from": src, "to": to}
    if exclude is not None:
        op["exclude"] = exclude
    return op


CASES: list[Case] = [
    # --- TestBuild --------------------------------------------------------------------------
    # TestBuild/build artifact with single file copy
    Case(
        upstream="TestBuild/build artifact with single file copy",
        artifact="cp-single-file",
        files={"config.yaml": "apiVersion: v1\nkind: ConfigMap"},
        copy=[_op("@source/config.yaml", "@artifact/")],
        expected={"config.yaml": "apiVersion: v1\nkind: ConfigMap"},
    ),
    # TestBuild/build artifact with multiple copy operations
    # Two aliases (git, oci): upstream gives each its own directory; here each alias's files are
    # under <root>/<alias>/ and the `from` paths carry that prefix ("@git/app.yaml" →
    # "@git/git/app.yaml"). Upstream's revision ("latest@<digest>") check is not ported.
    Case(
        upstream="TestBuild/build artifact with multiple copy operations",
        artifact="cp-multi-source",
        aliases=("git", "oci"),
        files={"git/app.yaml": "apiVersion: apps/v1", "oci/config.json": '{"version": "1.0"}'},
        copy=[
            _op("@git/git/app.yaml", "@artifact/manifests/"),
            _op("@oci/oci/config.json", "@artifact/config/"),
        ],
        expected={
            "manifests/app.yaml": "apiVersion: apps/v1",
            "config/config.json": '{"version": "1.0"}',
        },
    ),
    # TestBuild/build artifact with glob patterns
    Case(
        upstream="TestBuild/build artifact with glob patterns",
        artifact="cp-glob-pattern",
        files={
            "deployment.yaml": "apiVersion: v1",
            "service.yaml": "apiVersion: v1",
            "configmap.yaml": "apiVersion: v1",
        },
        copy=[_op("@source/*.yaml", "@artifact/manifests/")],
        expected={
            "manifests/deployment.yaml": "apiVersion: v1",
            "manifests/service.yaml": "apiVersion: v1",
            "manifests/configmap.yaml": "apiVersion: v1",
        },
    ),
    # TestBuild/build artifact with root directory copy
    # "@source/" → pattern "" → filepath.Clean → "." → applySingleDirectoryCopy joins
    # filepath.Base(".") = "." onto the destination: the source root's entries land at the
    # artifact root.
    Case(
        upstream="TestBuild/build artifact with root directory copy",
        artifact="cp-root-to-root",
        files={"root.yaml": "root: content", "subdir/nested.yaml": "nested: content"},
        copy=[_op("@source/", "@artifact/")],
        expected={"root.yaml": "root: content", "subdir/nested.yaml": "nested: content"},
    ),
    # TestBuild/build artifact with recursive directory copy
    Case(
        upstream="TestBuild/build artifact with recursive directory copy",
        artifact="cp-recursive",
        files={"root.yaml": "root: content", "subdir/nested.yaml": "nested: content"},
        copy=[_op("@source/**", "@artifact/")],
        expected={"root.yaml": "root: content", "subdir/nested.yaml": "nested: content"},
    ),
    # TestBuild/copy operations overwrite entire subdirectories
    # Two aliases (source1, source2): each alias's files under <root>/<alias>/, `from` prefixed
    # ("@source1/**" → "@source1/source1/**"; the "/**" suffix strips that prefix again, so the
    # destinations are upstream's).
    Case(
        upstream="TestBuild/copy operations overwrite entire subdirectories",
        artifact="cp-subdir-overwrite",
        aliases=("source1", "source2"),
        files={
            "source1/config/app.yaml": "source1: app",
            "source1/config/database.yaml": "source1: db",
            "source2/config/app.yaml": "source2: app",
            "source2/config/network.yaml": "source2: net",
        },
        copy=[_op("@source1/source1/**", "@artifact/"), _op("@source2/source2/**", "@artifact/")],
        expected={
            "config/app.yaml": "source2: app",
            "config/database.yaml": "source1: db",
            "config/network.yaml": "source2: net",
        },
    ),
    # TestBuild/directory copy without trailing slash creates subdirectory
    Case(
        upstream="TestBuild/directory copy without trailing slash creates subdirectory",
        artifact="cp-dir-no-slash",
        files={"config/app.yaml": "app: config", "config/db.yaml": "db: config"},
        copy=[_op("@source/config", "@artifact/dest")],
        expected={"dest/config/app.yaml": "app: config", "dest/config/db.yaml": "db: config"},
    ),
    # TestBuild/directory copy with trailing slash creates subdirectory
    Case(
        upstream="TestBuild/directory copy with trailing slash creates subdirectory",
        artifact="cp-dir-slash",
        files={"config/app.yaml": "app: config", "config/db.yaml": "db: config"},
        copy=[_op("@source/config/", "@artifact/dest/")],
        expected={"dest/config/app.yaml": "app: config", "dest/config/db.yaml": "db: config"},
    ),
    # TestBuild/file copy with trailing slash uses source filename
    Case(
        upstream="TestBuild/file copy with trailing slash uses source filename",
        artifact="cp-file-to-dir",
        files={"config.yaml": "a: test"},
        copy=[_op("@source/config.yaml", "@artifact/dest/")],
        expected={"dest/config.yaml": "a: test"},
    ),
    # TestBuild/recursive glob pattern strips directory prefix like cp
    Case(
        upstream="TestBuild/recursive glob pattern strips directory prefix like cp",
        artifact="cp-glob-prefix-strip",
        files={"config/app.yaml": "app: config", "config/subdir/db.yaml": "db: config"},
        copy=[_op("@source/config/**", "@artifact/dest/")],
        expected={"dest/app.yaml": "app: config", "dest/subdir/db.yaml": "db: config"},
    ),
    # TestBuild/file-to-file copy should not treat destination as directory
    # Two aliases (chart, repo): each alias's files under <root>/<alias>/, `from` prefixed
    # ("@chart/**" → "@chart/chart/**", "@repo/charts/…" → "@repo/repo/charts/…").
    # Upstream lists Chart.yaml and podinfo/values.yaml only (verifyContents is not exact);
    # "@chart/**" also copies the chart's values.yaml to the artifact root, added here.
    Case(
        upstream="TestBuild/file-to-file copy should not treat destination as directory",
        artifact="cp-file-to-file",
        aliases=("chart", "repo"),
        files={
            "repo/charts/podinfo/values-prod.yaml": "env: production",
            "chart/Chart.yaml": "name: podinfo",
            "chart/values.yaml": "name: podinfo",
        },
        copy=[
            _op("@chart/chart/**", "@artifact/"),
            _op("@repo/repo/charts/podinfo/values-prod.yaml", "@artifact/podinfo/values.yaml"),
        ],
        expected={
            "Chart.yaml": "name: podinfo",
            "values.yaml": "name: podinfo",
            "podinfo/values.yaml": "env: production",
        },
    ),
    # TestBuild/file copy should detect when destination is a directory
    Case(
        upstream="TestBuild/file copy should detect when destination is a directory",
        artifact="cp-file-to-existing-dir",
        files={"file1.txt": "content1", "subdir/file2.txt": "content2"},
        copy=[_op("@source/subdir/", "@artifact/"), _op("@source/file1.txt", "@artifact/subdir")],
        expected={"subdir/file1.txt": "content1", "subdir/file2.txt": "content2"},
    ),
    # --- TestBuildErrors --------------------------------------------------------------------
    # TestBuildErrors/error when source file does not exist
    Case(
        upstream="TestBuildErrors/error when source file does not exist",
        artifact="error-source-file",
        files={},
        copy=[_op("@source/test.yaml", "@artifact/")],
        error="does not exist",
    ),
    # TestBuildErrors/error when glob pattern matches no files
    Case(
        upstream="TestBuildErrors/error when glob pattern matches no files",
        artifact="error-glob-match",
        files={},
        copy=[_op("@source/*.yaml", "@artifact/")],
        error="no files match pattern",
    ),
    # TestBuildErrors/error when invalid glob pattern is used
    # fs.Glob returns path.ErrBadPattern ("syntax error in pattern") for an unmatched bracket.
    Case(
        upstream="TestBuildErrors/error when invalid glob pattern is used",
        artifact="error-glob-pattern",
        files={},
        copy=[_op("@source/[", "@artifact/")],
        error="syntax error in pattern",
    ),
    # TestBuildErrors/error when source alias not found
    Case(
        upstream="TestBuildErrors/error when source alias not found",
        artifact="error-alias",
        files={},
        copy=[_op("@missing/file.yaml", "@artifact/")],
        error="source alias 'missing' not found",
    ),
    # --- TestBuildWithExcludes --------------------------------------------------------------
    # TestBuildWithExcludes/exclude single file extension
    Case(
        upstream="TestBuildWithExcludes/exclude single file extension",
        files={
            "app.yaml": "yaml content",
            "config.json": "json content",
            "README.md": "markdown content",
            "notes.md": "more markdown",
        },
        copy=[_op("@source/**", "@artifact/", ["*.md"])],
        expected={"app.yaml": "yaml content", "config.json": "json content"},
    ),
    # TestBuildWithExcludes/exclude directory recursively
    Case(
        upstream="TestBuildWithExcludes/exclude directory recursively",
        files={
            "app.yaml": "main app config",
            "testdata/test.yaml": "test config",
            "testdata/fixture.json": "test fixture",
            "configs/prod.yaml": "prod config",
        },
        copy=[_op("@source/**", "@artifact/", ["**/testdata/**"])],
        expected={"app.yaml": "main app config", "configs/prod.yaml": "prod config"},
        no_dirs=("testdata",),
    ),
    # TestBuildWithExcludes/multiple exclude patterns
    Case(
        upstream="TestBuildWithExcludes/multiple exclude patterns",
        files={
            "app.yaml": "app config",
            "README.md": "documentation",
            "temp.tmp": "temporary file",
            ".hidden": "hidden file",
            "docs/guide.md": "user guide",
            "tests/test.go": "test file",
        },
        copy=[_op("@source/**", "@artifact/", ["*.md", "*.tmp", "**/.*", "**/tests/**"])],
        expected={"app.yaml": "app config"},
        dirs=("docs",),
        no_dirs=("tests",),
    ),
    # TestBuildWithExcludes/exclude with glob patterns
    Case(
        upstream="TestBuildWithExcludes/exclude with glob patterns",
        files={
            "app.yaml": "app config",
            "config.yaml": "config",
            "secret.yaml": "secret",
            "other.json": "other config",
        },
        copy=[_op("@source/*.yaml", "@artifact/configs/", ["secret.yaml"])],
        expected={"configs/app.yaml": "app config", "configs/config.yaml": "config"},
    ),
    # TestBuildWithExcludes/exclude single file copy
    Case(
        upstream="TestBuildWithExcludes/exclude single file copy",
        files={"secret.yaml": "secret content"},
        copy=[_op("@source/secret.yaml", "@artifact/config.yaml", ["secret.yaml"])],
        expected={},
        empty=True,
    ),
    # TestBuildWithExcludes/exclude nested directory by full path from source root
    # (upstream issue fluxcd/source-watcher#306)
    Case(
        upstream="TestBuildWithExcludes/exclude nested directory by full path from source root",
        files={
            "infrastructure/controllers/descheduler/release.yaml": "descheduler release",
            "infrastructure/controllers/descheduler/kustomization.yaml": "descheduler kustomization",
            "infrastructure/controllers/sealed-secrets/release.yaml": "sealed-secrets release",
            "infrastructure/configs/cluster-issuer.yaml": "cluster issuer",
        },
        copy=[
            _op(
                "@source/infrastructure/**",
                "@artifact/",
                ["infrastructure/controllers/descheduler/**"],
            )
        ],
        expected={
            "controllers/sealed-secrets/release.yaml": "sealed-secrets release",
            "configs/cluster-issuer.yaml": "cluster issuer",
        },
        no_dirs=("controllers/descheduler",),
    ),
    # TestBuildWithExcludes/exclude nested directory from non-glob directory copy by source root path
    Case(
        upstream="TestBuildWithExcludes/exclude nested directory from non-glob directory copy by source root path",
        files={
            "infrastructure/controllers/descheduler/release.yaml": "descheduler release",
            "infrastructure/controllers/sealed-secrets/release.yaml": "sealed-secrets release",
            "infrastructure/configs/cluster-issuer.yaml": "cluster issuer",
        },
        copy=[
            _op(
                "@source/infrastructure",
                "@artifact/",
                ["infrastructure/controllers/descheduler/**"],
            )
        ],
        expected={
            "infrastructure/controllers/sealed-secrets/release.yaml": "sealed-secrets release",
            "infrastructure/configs/cluster-issuer.yaml": "cluster issuer",
        },
        no_dirs=("infrastructure/controllers/descheduler",),
    ),
    # TestBuildWithExcludes/exclude nested directory from glob directory copy by selected root path
    Case(
        upstream="TestBuildWithExcludes/exclude nested directory from glob directory copy by selected root path",
        files={
            "infrastructure/controllers/descheduler/release.yaml": "descheduler release",
            "infrastructure/controllers/sealed-secrets/release.yaml": "sealed-secrets release",
            "infrastructure/configs/cluster-issuer.yaml": "cluster issuer",
        },
        copy=[_op("@source/infrastructure/**", "@artifact/", ["controllers/descheduler/**"])],
        expected={
            "controllers/sealed-secrets/release.yaml": "sealed-secrets release",
            "configs/cluster-issuer.yaml": "cluster issuer",
        },
        no_dirs=("controllers/descheduler",),
    ),
    # TestBuildWithExcludes/exclude does not use recursive walk root as anchor
    Case(
        upstream="TestBuildWithExcludes/exclude does not use recursive walk root as anchor",
        files={
            "infrastructure/descheduler/release.yaml": "top-level descheduler",
            "infrastructure/controllers/descheduler/release.yaml": "nested descheduler",
            "infrastructure/controllers/sealed-secrets/release.yaml": "sealed-secrets release",
        },
        copy=[_op("@source/infrastructure/**", "@artifact/", ["descheduler/**"])],
        expected={
            "controllers/descheduler/release.yaml": "nested descheduler",
            "controllers/sealed-secrets/release.yaml": "sealed-secrets release",
        },
        no_dirs=("descheduler",),
    ),
    # TestBuildWithExcludes/exclude nested directory from non-glob directory copy by subtree path
    Case(
        upstream="TestBuildWithExcludes/exclude nested directory from non-glob directory copy by subtree path",
        files={
            "infrastructure/controllers/descheduler/release.yaml": "descheduler release",
            "infrastructure/controllers/sealed-secrets/release.yaml": "sealed-secrets release",
            "infrastructure/configs/cluster-issuer.yaml": "cluster issuer",
        },
        copy=[_op("@source/infrastructure", "@artifact/", ["controllers/descheduler/**"])],
        expected={
            "infrastructure/controllers/sealed-secrets/release.yaml": "sealed-secrets release",
            "infrastructure/configs/cluster-issuer.yaml": "cluster issuer",
        },
        no_dirs=("infrastructure/controllers/descheduler",),
    ),
    # TestBuildWithExcludes/exclude single nested file by full path from source root
    Case(
        upstream="TestBuildWithExcludes/exclude single nested file by full path from source root",
        files={
            "infrastructure/configs/app.yaml": "app config",
            "infrastructure/configs/secret.yaml": "secret config",
        },
        copy=[
            _op("@source/infrastructure/**", "@artifact/", ["infrastructure/configs/secret.yaml"])
        ],
        expected={"configs/app.yaml": "app config"},
    ),
    # TestBuildWithExcludes/all files excluded - error
    Case(
        upstream="TestBuildWithExcludes/all files excluded - error",
        files={"test.md": "test file", "other.md": "other file"},
        copy=[_op("@source/*.md", "@artifact/", ["*.md"])],
        error="all files matching pattern",
    ),
    # TestBuildWithExcludes/invalid exclude - error
    # Upstream never creates the source directory here: the exclude patterns are validated
    # (doublestar.Match(pattern, ".")) before the source root is opened.
    Case(
        upstream="TestBuildWithExcludes/invalid exclude - error",
        files={},
        copy=[_op("@source/*.md", "@artifact/", ["[*.md"])],
        error="invalid exclude pattern",
        create_root=False,
    ),
    # --- derived from builder.go (no upstream test) -----------------------------------------
    # builder.go parseCopySource: a `from` not starting with '@', wrapped by applyCopyOperation
    # as "invalid copy source '%s': %w".
    Case(
        upstream="builder.go parseCopySource/source must start with '@'",
        files={"config.yaml": "a: test"},
        copy=[_op("source/config.yaml", "@artifact/")],
        error="invalid copy source 'source/config.yaml': source must start with '@'",
    ),
    # builder.go parseCopySource: a `from` without '/' after the alias.
    Case(
        upstream="builder.go parseCopySource/source format must be '@alias/pattern'",
        files={"config.yaml": "a: test"},
        copy=[_op("@source", "@artifact/")],
        error="invalid copy source '@source': source format must be '@alias/pattern'",
    ),
    # builder.go parseCopyDestinationRelative: a `to` not starting with '@artifact/', wrapped as
    # "invalid copy destination '%s': %w".
    Case(
        upstream="builder.go parseCopyDestinationRelative/destination must start with '@artifact/'",
        files={"config.yaml": "a: test"},
        copy=[_op("@source/config.yaml", "artifact/")],
        error="invalid copy destination 'artifact/': destination must start with '@artifact/'",
    ),
    # builder.go parseCopyDestinationRelative: "@artifact" without the slash is not the prefix.
    Case(
        upstream="builder.go parseCopyDestinationRelative/@artifact without slash",
        files={"config.yaml": "a: test"},
        copy=[_op("@source/config.yaml", "@artifact")],
        error="invalid copy destination '@artifact': destination must start with '@artifact/'",
    ),
]


def _generator(case: Case, artifact: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "source.extensions.fluxcd.io/v1beta1",
        "kind": "ArtifactGenerator",
        "metadata": {"name": "builder-test", "namespace": "flux-system"},
        "spec": {
            "sources": [
                {"alias": alias, "kind": "GitRepository", "name": alias} for alias in case.aliases
            ],
            "artifacts": [artifact],
        },
    }


def _contents(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("case", CASES, ids=[c.upstream for c in CASES])
def test_copy_semantics_match_upstream(case: Case, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    if case.create_root:
        repo.mkdir()
        for rel, content in case.files.items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
    into = tmp_path / "out" / case.artifact
    artifact = {"name": case.artifact, "copy": case.copy}
    generator = _generator(case, artifact)

    if case.error is not None:
        with pytest.raises(InputError) as err:
            materialize(generator, artifact, ("generator.yaml", 3), repo, into)
        assert case.error in err.value.message, f"{UPSTREAM} {case.upstream}: {err.value.message}"
        return

    out = materialize(generator, artifact, ("generator.yaml", 3), repo, into)
    assert case.expected is not None
    assert _contents(into) == case.expected
    for rel in case.dirs:
        assert (into / rel).is_dir(), f"{rel} should be a directory"
    for rel in case.no_dirs:
        assert not (into / rel).is_dir(), f"{rel} should not be a directory"
    if case.empty:
        assert list(into.iterdir()) == []
    # Artifact.files names exactly the artifact's files, each mapped to a source file with its content.
    assert set(out.files) == {str((into / rel).resolve()) for rel in case.expected}
    for target, source in out.files.items():
        assert Path(source).read_text() == Path(target).read_text()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    source=st.one_of(st.text(max_size=30), st.sampled_from(["@src/", "@src/a/**", "@src/[", "@src/*/b", "@nope/x", "@src/../x"])),
    to=st.one_of(st.text(max_size=20), st.sampled_from(["@artifact/", "@artifact/d/", "@artifact/d", "@artifact/../up"])),
    exclude=st.lists(st.one_of(st.text(max_size=10), st.sampled_from(["*.md", "**/x/**", "[", "{a", "a/**"])), max_size=3),
)
def test_any_copy_operation_copies_or_fails_in_one_line(tmp_path: Path, source: str, to: str, exclude: list[str]) -> None:
    """A fuzz of the ArtifactGenerator reader: a copy, or an InputError naming the generator;
    never another exception, and never a file written outside the artifact."""
    root = tmp_path / "repo"
    (root / "a" / "x").mkdir(parents=True, exist_ok=True)
    (root / "a" / "x" / "f.yaml").write_text("k: v\n")
    (root / "a" / "r.md").write_text("#\n")
    generator = {
        "apiVersion": "source.extensions.fluxcd.io/v1beta1", "kind": "ArtifactGenerator",
        "metadata": {"name": "g", "namespace": "flux-system"},
        "spec": {"sources": [{"alias": "src", "kind": "GitRepository", "name": "repo"}]},
    }
    artifact = {"name": "a", "copy": [{"from": source, "to": to, "exclude": exclude}]}
    into = tmp_path / "out" / "artifact"
    try:
        made = materialize(generator, artifact, ("gen.yaml", 3), root, into)
    except InputError as err:
        assert "ArtifactGenerator flux-system/g: artifact a: " in str(err)
        return
    for written in made.files:
        assert Path(written).is_relative_to(into.resolve())


@pytest.mark.parametrize(("source", "to"), [("@src/a/**", "@artifact/../up/"), ("@src/../outside", "@artifact/")])
def test_nothing_is_read_or_written_outside_the_source_and_the_artifact(tmp_path: Path, source: str, to: str) -> None:
    """builder.go copies through os.Root: a path escaping either root is refused."""
    root = tmp_path / "repo"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.yaml").write_text("k: v\n")
    (tmp_path / "outside").write_text("secret\n")
    generator = {
        "apiVersion": "source.extensions.fluxcd.io/v1beta1", "kind": "ArtifactGenerator",
        "metadata": {"name": "g", "namespace": "flux-system"},
        "spec": {"sources": [{"alias": "src", "kind": "GitRepository", "name": "repo"}]},
    }
    with pytest.raises(InputError, match="path escapes from parent"):
        materialize(generator, {"name": "a", "copy": [{"from": source, "to": to}]}, ("gen.yaml", 3), root, tmp_path / "out" / "a")
    assert not (tmp_path / "out" / "up").exists()
