"""Strategies and oracles for the input fuzz suite (tests/fuzz).

Inputs are real files of this repository (built-in profiles, example scenarios, HelmReleases,
values, rendered manifests, a ``.helmsim.yaml``) mutated the way hostile or broken input looks:
a node replaced by a value of another type, keys dropped or added, deep nesting, then the YAML
text itself mutated (tags, anchors, aliases, BOMs, control characters, stray indicators,
duplicate keys). The oracle is what the user relies on: a reader returns or raises
``InputError`` on one line; the CLI exits 0, 1 or 2, and on 2 prints exactly one ``error:`` line
and never a traceback (exit 3 would be a crash).
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import os
import random
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from helmsim.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
CASES = {"count": 0}
"""How many generated inputs the suite ran (printed at the end of the session)."""

# Deterministic unless HELMSIM_FUZZ=random: `make test` and CI see the same 10,000+ cases.
RANDOM = os.environ.get("HELMSIM_FUZZ") == "random"
SCALE = float(os.environ.get("HELMSIM_FUZZ_SCALE", "1"))


def fuzz_settings(examples: int, *, deadline_s: float = 2.0) -> settings:
    """Settings of one fuzz test: ``examples`` cases, each bounded by ``deadline_s``."""
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=timedelta(seconds=deadline_s),
        derandomize=not RANDOM,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        print_blob=True,
    )


# --- seeds: real inputs of this repository -------------------------------------------------------


def _yaml_docs(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def seeds(kind: str) -> list[Any]:
    """Parsed example inputs of one reader kind."""
    if kind == "profile":
        files = [*sorted((ROOT / "src/helmsim/profiles").glob("*.yaml")), ROOT / "tests/realcharts/unmapped-operators/profiles/operators.yaml"]
        return [_yaml_docs(p)[0] for p in files]
    if kind == "scenario":
        files = sorted((ROOT / "examples/scenarios").rglob("*.helmsim.yaml"))
        return [_yaml_docs(p)[0] for p in files[:12]]
    if kind == "observation":
        files = sorted((ROOT / "examples/explain").glob("*.observation.yaml"))
        return [_yaml_docs(p)[0] for p in files]
    if kind == "helmrelease":
        return [d for p in sorted(ROOT.glob("examples/*/flux/*.yaml")) for d in _yaml_docs(p)]
    if kind == "sources":  # HelmReleases with their source objects, one List per tree
        files = sorted((ROOT / "tests/realcharts/chart-sources").glob("flux*/*.yaml"))
        return [{"apiVersion": "v1", "kind": "List", "items": _yaml_docs(p)} for p in files]
    if kind == "chartyaml":
        files = [*ROOT.glob("examples/*/Chart.yaml"), *ROOT.glob("tests/realcharts/*/Chart.yaml")]
        return [d for p in sorted(files) for d in _yaml_docs(p)]
    if kind == "values":
        files = [*ROOT.glob("examples/*/values.yaml"), *ROOT.glob("examples/*/ci/*.yaml")]
        return [d for p in sorted(files) for d in _yaml_docs(p) if isinstance(d, dict)]
    if kind == "config":
        return [
            {
                "profiles": ["kind", "cilium-always"],
                "failOn": "warning",
                "rules": {"HS112": "off", "workload-before-policy": "error"},
                "ignore": [{"rule": "HS102", "object": "PersistentVolumeClaim/*/hf-cache", "reason": "bound elsewhere"}],
                "catalog": [
                    {
                        "name": "our-migrator",
                        "summary": "runs the schema migration",
                        "sources": ["example/migrator cmd/main.go: connects at start"],
                        "match": {"image": "ghcr.io/example/migrator"},
                        "needs": ["svc/data/postgres:5432"],
                        "run": "20s",
                    }
                ],
                "unmappedReleases": [
                    {"chart": "cert-manager", "crds": [{"group": "cert-manager.io", "version": "v1", "kind": "Certificate", "scope": "Namespaced"}]}
                ],
            }
        ]
    if kind == "objects":
        return _live_objects()
    raise ValueError(kind)


def _live_objects() -> list[Any]:
    """Objects as ``kubectl get -o yaml`` saves them: the examples' manifests with statuses."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 2},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "status": {
            "observedGeneration": 2,
            "replicas": 2,
            "updatedReplicas": 2,
            "readyReplicas": 1,
            "availableReplicas": 1,
            "conditions": [
                {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"},
            ],
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "containerStatuses": [{"name": "c", "ready": False, "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
        },
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "default"},
        "spec": {"backoffLimit": 1, "completions": 1, "parallelism": 1},
        "status": {"failed": 2, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]},
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "hf-cache", "namespace": "model-serving"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"},
    }
    hr = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "app", "namespace": "flux-system", "generation": 3},
        "spec": {"interval": "5m"},
        "status": {
            "observedGeneration": 3,
            "conditions": [{"type": "Ready", "status": "False", "reason": "InstallFailed", "message": "timeout", "observedGeneration": 3}],
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced", "versions": [{"name": "v1", "served": True, "storage": True}]},
        "status": {"conditions": [{"type": "Established", "status": "True"}, {"type": "NamesAccepted", "status": "True"}]},
    }
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default", "generation": 1},
        "spec": {"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}},
        "status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 2, "currentReplicas": 3, "updatedReplicas": 2, "currentRevision": "a", "updateRevision": "b"},
    }
    return [deployment, pod, job, pvc, hr, crd, sts, {"apiVersion": "v1", "kind": "List", "items": [dict(deployment), dict(pod)]}]


def manifest_seeds() -> list[Any]:
    """Documents rendered from the examples' charts (rendered once, by Helm's engine)."""
    from helmsim import render

    out: list[Any] = []
    for chart in ("examples/seed1-migrate-race", "examples/seed2-hf-cache"):
        rendered = render.render_chart(ROOT / chart, render.RenderOptions(namespace="kagent"))
        for f in rendered.files:
            out.extend(d for d in yaml.safe_load_all(f.content) if isinstance(d, dict))
    return out


# --- mutation ------------------------------------------------------------------------------------

_WORDS = [
    "", "yes", "no", "on", "off", "y", "n", "~", "null", "true", "0777", "0x1F", "1e400", "-1",
    "5m", "1h30m", "-5s", "1.5.3", "v1", "apps/v1", "Deployment", "kube-apiserver", "*", "?",
    "a" * 300, "ütf-8 ✓", "line\nbreak", "tab\there", "\x1b[31mred", "{{ .Values.x }}", "%", "@",
    "10.0.0.0/33", "::1", "1Gi", "svc/ns/name:80", "HS101", "Ready", "False",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(_WORDS),
)
_KEYS = st.one_of(st.sampled_from(["extra", "spec", "name", "kind", "1", "on", "<<"]), st.integers(-2, 2), st.booleans())
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(_KEYS, scalars, max_size=3),
    st.lists(st.dictionaries(_KEYS, scalars, max_size=2), max_size=2),
)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _pick(draw: st.DrawFn, doc: Any) -> tuple[Any, ...]:
    """A path into ``doc``, by a random walk from the root (few draws, any depth)."""
    path: tuple[Any, ...] = ()
    node = doc
    while isinstance(node, (dict, list)) and node and draw(st.integers(0, 3)) > 0:
        keys = list(node) if isinstance(node, dict) else range(len(node))
        key = keys[draw(st.integers(0, len(keys) - 1))]
        path, node = (*path, key), node[key]
    return path


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


@st.composite
def mutated(draw: st.DrawFn, pool: list[Any]) -> Any:
    """A seed with one or two structural mutations: a node replaced, deleted, added or nested
    past the depth limit."""
    doc = copy.deepcopy(pool[draw(st.integers(0, len(pool) - 1))])
    for _ in range(draw(st.integers(1, 2))):
        path = _pick(draw, doc)
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add", "deep"]))
        if not path:
            if op in ("replace", "deep"):
                doc = draw(values) if op == "replace" else _nested(draw(st.sampled_from([100, 140])))
            continue
        parent = _get(doc, path[:-1])
        key = path[-1]
        if op == "replace":
            parent[key] = draw(values)
        elif op == "deep":
            parent[key] = _nested(draw(st.sampled_from([30, 127, 129, 200])))
        elif op == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "spec", "metadata", "items", "status", "1"]))] = draw(values)
        else:
            parent.append(draw(values))
    return doc


_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_FRAGMENTS = [
    "!!int abc", "!!float x", "!!binary ***", "!!str", "!foo", "!!set", "!!python/object:os.system", "&a", "*a",
    "*nope", "&a [*a]", "<<: *a", "\ufeff", "\x00", "\x07", "\x1b", "\t", "'", '"', "{", "[", "}", "]",
    "? [a]\n: 1", "~: 1", "- ", "---", "...", "%YAML 1.1\n---", ": ", "#", "|", ">", "key: v\nkey: w",
    "1: a\ntrue: b", "1: a\n'1': b", "\udcff",
]


@st.composite
def yaml_text(draw: st.DrawFn, pool: list[Any]) -> str:
    """A mutated seed as YAML text, sometimes with its text mutated too."""
    doc = draw(mutated(pool))
    try:
        text = yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, ValueError, RecursionError):
        text = "{}\n"
    if draw(st.integers(0, 3)) == 0:
        lines = text.split("\n")
        for _ in range(draw(st.integers(1, 2))):
            i = draw(st.integers(0, len(lines) - 1))
            fragment = draw(st.sampled_from(_FRAGMENTS))
            if draw(st.booleans()):
                lines[i] = lines[i] + " " + fragment
            else:
                lines.insert(i, fragment)
        text = "\n".join(lines)
    return text


# --- the same mutations driven by one seeded Random: many cases per Hypothesis example ----------
#
# Hypothesis spends about as long choosing an input as a reader spends reading it; drawing one
# seed per example and deriving several inputs from it with ``random.Random`` keeps 10,000 cases
# under a minute. Such cases do not shrink, so a failure's message carries the whole input.

_RANDOM_SCALARS: list[Any] = [None, True, False, 0, -1, 2**31, 2**63, 2**64, 10**30, 1.5, -0.0,
                              float("inf"), float("-inf"), float("nan"), *_WORDS]


def _random_value(rng: random.Random) -> Any:
    shape = rng.randrange(6)
    if shape == 0:
        return [rng.choice(_RANDOM_SCALARS) for _ in range(rng.randrange(4))]
    if shape == 1:
        keys = ["extra", "spec", "name", "kind", "1", "on", "<<", 1, True, -2]
        return {rng.choice(keys): rng.choice(_RANDOM_SCALARS) for _ in range(rng.randrange(4))}
    return rng.choice(_RANDOM_SCALARS)


def random_doc(rng: random.Random, pool: list[Any]) -> Any:
    """A seed with one to three structural mutations chosen by ``rng``."""
    doc = copy.deepcopy(rng.choice(pool))
    for _ in range(rng.randint(1, 3)):
        path: tuple[Any, ...] = ()
        node = doc
        while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
            key = rng.choice(list(node) if isinstance(node, dict) else range(len(node)))
            path, node = (*path, key), node[key]
        op = rng.choice(["replace", "replace", "replace", "delete", "add", "deep"])
        if not path:
            doc = _random_value(rng) if op == "replace" else doc
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        if op == "replace":
            parent[key] = _random_value(rng)
        elif op == "deep":
            parent[key] = _nested(rng.choice([30, 127, 129, 200]))
        elif op == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent[rng.choice(["extra", "spec", "metadata", "items", "status", "1"])] = _random_value(rng)
        else:
            parent.append(_random_value(rng))
    return doc


def random_text(rng: random.Random, pool: list[Any]) -> str:
    """:func:`random_doc` as YAML, its text mutated one time in four."""
    try:
        text = yaml.dump(random_doc(rng, pool), Dumper=_DUMPER, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, ValueError, RecursionError):
        text = "{}\n"
    if rng.random() < 0.25:
        lines = text.split("\n")
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(lines))
            fragment = rng.choice(_FRAGMENTS)
            lines[i] = lines[i] + " " + fragment if rng.random() < 0.5 else lines[i]
            if rng.random() < 0.5:
                lines.insert(i, fragment)
        text = "\n".join(lines)
    return text


def batches(pool: list[Any], size: int = 5) -> st.SearchStrategy[list[str]]:
    """``size`` inputs per Hypothesis example, derived from one drawn seed."""
    return st.integers(0, 2**32 - 1).map(lambda seed: _batch(random.Random(seed), pool, size))


def _batch(rng: random.Random, pool: list[Any], size: int) -> list[str]:
    return [random_text(rng, pool) for _ in range(size)]


def encode(text: str) -> bytes:
    """Text as file bytes; lone surrogates become invalid UTF-8 bytes, as a broken editor writes."""
    return text.encode("utf-8", "surrogateescape" if any("\udc80" <= c <= "\udcff" for c in text) else "strict")


# --- oracles -------------------------------------------------------------------------------------


def reads_or_refuses(fn: Callable[[], Any], shown: Any = None) -> None:
    """A reader returns, or raises ``InputError`` whose text is one line; anything else (a
    crash that the CLI would turn into exit 3) fails the test, naming ``shown`` (the input)."""
    CASES["count"] += 1
    try:
        fn()
    except InputError as err:
        text = str(err)
        assert "\n" not in text and "\r" not in text, repr(text)
        assert text.strip(), "an empty error"
    except Exception as err:
        if shown is None:
            raise
        raise AssertionError(f"{type(err).__name__}: {err} on input {shown!r}") from err


@contextlib.contextmanager
def _argv(args: list[str]) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["helmsim", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield out, err
    finally:
        sys.argv = saved


def cli_exits_cleanly(args: list[str], *, allowed: tuple[int, ...] = (0, 1, 2)) -> tuple[int, str]:
    """Run the CLI in-process; exit 0/1/2 only, exit 2 with exactly one ``error:`` line."""
    from helmsim.cli import main

    CASES["count"] += 1
    os.environ.pop("HELMSIM_DEBUG", None)
    with _argv(args) as (_, err):
        try:
            main()
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 0
        else:  # pragma: no cover - main always exits
            code = 0
    return check_exit(code, err.getvalue(), allowed)


def check_exit(code: int, stderr: str, allowed: tuple[int, ...] = (0, 1, 2)) -> tuple[int, str]:
    """The oracle on an exit code and stderr."""
    assert code in allowed, f"exit {code}: {stderr}"
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    if code == 2:
        lines = [line for line in stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1, stderr
    return code, stderr


def finite(value: Any) -> bool:
    """Whether ``value`` holds no NaN (which compares unequal to itself)."""
    if isinstance(value, float):
        return not math.isnan(value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list):
        return all(finite(v) for v in value)
    return True
