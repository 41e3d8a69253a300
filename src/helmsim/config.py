"""``.helmsim.yaml``: the check's profiles, rule severities and ignores, found upward from the chart.

```yaml
profiles: [kind, cilium-always]          # the matrix when --profile is not given
failOn: error                            # error | warning | never (the CLI flag wins)
rules:
  HS112: off                             # off | note | warning | error (id or slug)
  workload-before-policy: error
unmappedReleases:                        # CRDs of charts helmsim does not simulate
  - chart: cert-manager                  # or helmRelease: cert-manager/cert-manager (a glob)
    crds: [{group: cert-manager.io, version: v1, kind: Certificate, scope: Namespaced}]
fleet:                                   # helmsim fleet's matrix (docs/fleet.md)
  releases:
    - target: charts/app
      values: [charts/app/ci/*-values.yaml]
ignore:
  - rule: HS102                          # id or slug; required
    object: PersistentVolumeClaim/*/hf-cache   # glob on Kind/ns/name; optional
    release: agent-platform/*            # glob on the HelmRelease ns/name; optional
    reason: the claim is bound by another release   # required
catalog:                                 # behaviour-catalog entries (docs/behaviour.md)
  - name: our-migrator
    summary: runs the schema migration, needs the database
    sources: ["example/migrator cmd/main.go: connects to $DB_HOST at start"]
    match: {image: "ghcr.io/example/migrator"}
    needs: ["svc/data/postgres:5432"]
    run: 20s
```
Errors name the file and the line of the offending key.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from helmsim import yamlio
from helmsim.cluster.profile import UnmappedRelease
from helmsim.errors import InputError
from helmsim.fleet.matrix import FleetMatrix

CONFIG_NAME = ".helmsim.yaml"
SeverityName = Literal["off", "note", "warning", "error"]


class Ignore(BaseModel):
    """One suppression: a rule, optionally narrowed to objects and releases, with a reason."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    rule: str = Field(min_length=1)
    object: str = "*"
    release: str = "*"
    reason: str = Field(min_length=1)

    def matches(self, rule_id: str, slug: str, obj: str, release: str) -> bool:
        return (
            self.rule in (rule_id, slug)
            and fnmatch.fnmatchcase(obj, self.object)
            and fnmatch.fnmatchcase(release, self.release)
        )


class Config(BaseModel):
    """The validated contents of ``.helmsim.yaml`` (every key optional)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, populate_by_name=True)

    profiles: tuple[str, ...] = ()
    fail_on: Literal["error", "warning", "never"] | None = Field(default=None, alias="failOn")
    rules: dict[str, SeverityName] = Field(default_factory=dict)
    ignore: tuple[Ignore, ...] = ()
    catalog: tuple[Any, ...] = Field(default=(), exclude=True)
    """Behaviour-catalog entries (``helmsim.cluster.catalog.CompiledEntry``), validated with
    this file's lines; they come before the built-in catalog."""
    fleet: FleetMatrix | None = None
    """The matrix of ``helmsim fleet`` (:mod:`helmsim.fleet.matrix`)."""
    unmapped_releases: tuple[UnmappedRelease, ...] = Field(default=(), alias="unmappedReleases")
    """CRDs the charts of unmapped HelmReleases install (docs/profiles.md#unmappedreleases)."""
    source: str | None = Field(default=None, exclude=True)

    @field_validator("rules", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:
        # YAML 1.1 reads a bare `off` as the boolean false.
        if isinstance(v, dict):
            return {k: ("off" if val is False else val) for k, val in v.items()}
        return v

    def severity_for(self, rule_id: str, slug: str) -> SeverityName | None:
        """The configured severity of a rule (by id or slug), ``None`` when not configured."""
        return self.rules.get(rule_id) or self.rules.get(slug)

    def ignored(self, rule_id: str, slug: str, obj: str, release: str) -> str | None:
        """The reason a finding is ignored by this file, if it is."""
        for ig in self.ignore:
            if ig.matches(rule_id, slug, obj, release):
                return ig.reason
        return None


def repository_root(start: str | Path) -> Path | None:
    """The git work tree holding ``start``: the nearest directory at or above it with a ``.git``
    entry (a directory, or the file a worktree or submodule has), else ``None``."""
    p = Path(start).resolve()
    here = p if p.is_dir() else p.parent
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return None


def discover(start: str | Path, *, cwd: str | Path | None = None) -> Path | None:
    """The nearest ``.helmsim.yaml`` in ``start`` (a directory, or a file's directory) or above,
    never above the repository root (docs/security.md#the-config-file).

    Inside a git work tree the search stops at its root, so a ``.helmsim.yaml`` in a parent
    directory (``/tmp``, a home directory) never applies. Outside any repository it stops at the
    current directory when ``start`` is inside it, else ``start``'s own directory is the only
    one searched.
    """
    p = Path(start).resolve()
    here = p if p.is_dir() else p.parent
    top = repository_root(here)
    if top is None:
        work = Path(cwd if cwd is not None else Path.cwd()).resolve()
        top = work if here == work or work in here.parents else here
    for d in (here, *here.parents):
        candidate = d / CONFIG_NAME
        if candidate.is_file():
            return candidate
        if d == top:
            break
    return None


def config_name(source: str | None) -> str:
    """The config file in effect as a report names it: its path (relative to the current
    directory when inside it), or ``no config file``."""
    return display_path(source) if source else "no config file"


def config_file(source: str | None) -> str | None:
    """The ``configFile`` of a JSON report: the config's path, ``None`` (null) for none."""
    return display_path(source) if source else None


def describe(source: str | None) -> str:
    """``config: PATH`` or ``config: no config file``: the header line every report carries."""
    return f"config: {config_name(source)}"


def display_path(source: str) -> str:
    """``source`` relative to the current directory when inside it, else as it is."""
    p = Path(source)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(p)


def load_config(path: str | Path) -> Config:
    """Parse and validate a config file; bad input raises ``InputError`` with file and line."""
    p = Path(path)
    text = yamlio.read_text(p, "config file")
    data = yamlio.load_one(text, str(p))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("must be a mapping (profiles, failOn, rules, ignore, catalog, fleet, unmappedReleases)", file=str(p), line=1)
    entries: tuple[Any, ...] = ()
    if "catalog" in data:
        from helmsim.cluster.catalog import validate_entries
        from helmsim.yamlio import key_lines

        raw = data.pop("catalog")
        entries = tuple(
            validate_entries(raw or [], file=str(p), lines=key_lines(text), prefix=("catalog",))
        )
    try:
        cfg = Config.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        loc = [part for part in first["loc"]]
        line = _line_of(text, loc)
        where = ".".join(str(x) if not isinstance(x, int) else f"[{x}]" for x in loc).replace(
            ".[", "["
        )
        raise InputError(f"{where}: {first['msg']}", file=str(p), line=line) from None
    _check_rules(cfg, text, str(p))
    return cfg.model_copy(update={"source": str(p), "catalog": entries})


def _check_rules(cfg: Config, text: str, path: str) -> None:
    from helmsim.diagnose.registry import lookup

    for key in cfg.rules:
        if lookup(key) is None:
            raise InputError(
                f"rules.{key}: no such rule (ids HS1xx or slugs; see docs/rules/)",
                file=path,
                line=_line_of(text, ["rules", key]),
            )
    for i, ig in enumerate(cfg.ignore):
        if lookup(ig.rule) is None:
            raise InputError(
                f"ignore[{i}].rule: no such rule {ig.rule!r}",
                file=path,
                line=_line_of(text, ["ignore", i, "rule"]),
            )


def _line_of(text: str, loc: Sequence[Any]) -> int | None:
    """The 1-based line of the deepest key of ``loc`` that exists in the YAML text."""
    lines = yamlio.key_lines(text)
    path = tuple(loc)
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def config_for(target: str, explicit: str | None = None) -> Config:
    """The config of a check: ``explicit`` if given, else the one discovered from ``target``."""
    if explicit:
        return load_config(explicit)
    found = discover(target)
    return load_config(found) if found else Config()
