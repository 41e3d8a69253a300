"""Kustomization ``spec.postBuild``: the variables kustomize-controller substitutes in what a
Kustomization applies, before it applies it.

fluxcd/pkg kustomize/kustomize_varsub.go SubstituteVariables: the variables are the data of the
``substituteFrom`` ConfigMaps and Secrets (in order, newlines removed; a missing one that is not
``optional`` fails the build), then the inline ``substitute`` map; with any variable set, every
object not labelled or annotated ``kustomize.toolkit.fluxcd.io/substitute: disabled`` is run
through fluxcd/pkg envsubst: ``${var}`` and the default forms ``${var:=default}``, ``${var:-d}``,
``${var=d}``, ``${var-d}`` (an empty or unset value takes the default), the case forms
``${var^^}``, ``${var,,}``, ``${var^}``, ``${var,}`` and ``${#var}``; ``$${`` is a literal ``${``;
a bare ``$var`` is left alone. Strict mode is kustomize-controller's default since v1.9
(internal/features StrictPostBuildSubstitutions): a variable without a default that is not set
fails the build. Other forms (substrings, replacements, trims) are not evaluated and are said.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from helmsim import yamlio

DISABLED_KEY = "kustomize.toolkit.fluxcd.io/substitute"
_VAR_NAME = re.compile(r"^[_A-Za-z][_A-Za-z0-9]*$")  # kustomize_varsub.go varsubRegex
_EXPR = re.compile(r"^(?P<len>#)?(?P<name>[_A-Za-z][_A-Za-z0-9]*)(?P<op>:=|:-|:\+|:\?|=|-|\+|\?|\^\^|,,|\^|,)?(?P<arg>.*)$", re.S)


class BuildError(Exception):
    """Why kustomize-controller's build fails (the Kustomization's Ready=False BuildFailed)."""


class Unsupported(Exception):
    """A substitution form helmsim does not evaluate."""


def variables(ks: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """kustomize_varsub.go LoadVariables, then the inline ``substitute`` (overriding)."""
    spec = ks.get("spec") if isinstance(ks.get("spec"), Mapping) else {}
    post = spec.get("postBuild") if isinstance(spec, Mapping) else None
    if not isinstance(post, Mapping):
        return {}
    raw_meta = ks.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    namespace = str(meta.get("namespace") or "default")
    out: dict[str, str] = {}
    refs = post.get("substituteFrom")
    for ref in refs if isinstance(refs, list) else ():
        if not isinstance(ref, Mapping):
            continue
        kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        obj = next(
            (
                o for o in objects
                if o.get("kind") == kind and isinstance(o.get("metadata"), Mapping) and o["metadata"].get("name") == name
                and (o["metadata"].get("namespace") or namespace) == namespace
            ),
            None,
        )
        if obj is None:
            if ref.get("optional") is True:
                continue
            raise BuildError(f"substitute from '{kind}/{name}' error: {kind.lower()}s \"{name}\" not found")
        raw = obj.get("data")
        data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        for key, value in data.items():
            try:
                text = base64.b64decode(str(value), validate=True).decode("utf-8", "replace") if kind == "Secret" else str(value)
            except ValueError:
                raise BuildError(f"substitute from 'Secret/{name}' error: illegal base64 data in key {key}") from None
            out[str(key)] = text.replace("\n", "")
        if kind == "Secret" and isinstance(obj.get("stringData"), Mapping):
            out.update({str(k): str(v).replace("\n", "") for k, v in obj["stringData"].items()})
    inline = post.get("substitute")
    if isinstance(inline, Mapping):
        out.update({str(k): str(v).replace("\n", "") for k, v in inline.items()})
    for name in out:
        if not _VAR_NAME.match(name):
            raise BuildError(f"'{name}' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'")
    return out


def substitute(text: str, vars: Mapping[str, str], *, strict: bool = True) -> str:
    """envsubst of ``text`` (fluxcd/pkg envsubst): ``${…}`` expressions replaced, ``$${`` kept as
    ``${``. Raises BuildError for an unset variable in strict mode, Unsupported for a form
    helmsim does not evaluate."""
    out: list[str] = []
    i = 0
    while True:
        j = text.find("$", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        if text.startswith("$${", j):
            out.append("${")
            i = j + 3
            continue
        if not text.startswith("${", j):
            out.append("$")
            i = j + 1
            continue
        end = text.find("}", j + 2)
        if end < 0:
            raise BuildError("variable substitution failed: missing closing brace")
        out.append(_evaluate(text[j + 2 : end], vars, strict))
        i = end + 1


def _evaluate(expr: str, vars: Mapping[str, str], strict: bool) -> str:
    m = _EXPR.match(expr)
    if m is None:
        raise Unsupported(expr)
    name, op, arg = m["name"], m["op"] or "", m["arg"]
    if m["len"]:
        if op or arg:
            raise Unsupported(expr)
        op = "#"
    elif arg and op not in (":=", ":-", ":+", ":?", "=", "-", "+", "?"):
        raise Unsupported(expr)
    exists = name in vars
    value = vars.get(name, "")
    default_op = op in (":=", ":-", ":+", ":?", "=", "-", "+", "?")
    if not exists and strict and not default_op:
        # envsubst/template.go evalFunc: errVarNotSet
        raise BuildError(f'variable substitution failed: variable not set (strict mode): "{name}"')
    # template.go lookupFunc: every default operator is toDefault (an empty value takes it)
    if default_op:
        return value or arg
    cases: dict[str, Callable[[str], str]] = {
        "^^": str.upper, ",,": str.lower,
        "^": lambda v: v[:1].upper() + v[1:], ",": lambda v: v[:1].lower() + v[1:],
        "#": lambda v: str(len(v)), "": lambda v: v,
    }
    return cases[op](value)


def disabled(obj: Mapping[str, Any]) -> bool:
    """An object labelled or annotated ``kustomize.toolkit.fluxcd.io/substitute: disabled``."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    return any(
        isinstance(meta.get(f), Mapping) and meta[f].get(DISABLED_KEY) == "disabled" for f in ("labels", "annotations")
    ) if isinstance(meta, Mapping) else False


def gvk_name(obj: Mapping[str, Any]) -> str:
    """kyaml resid ``group_version_Kind/name`` (``~G`` for the core group), as the build error
    names an object."""
    api = str(obj.get("apiVersion") or "")
    group, _, version = api.rpartition("/")
    return f"{group or '~G'}_{version}_{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


def _without_comments(chunk: str) -> str:
    """``chunk`` with its comment lines emptied and trailing `` #`` comments cut (on lines
    without quotes, where a ``#`` cannot be inside a string), the line count unchanged."""
    out = []
    for line in chunk.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("#"):
            out.append("")
        elif " #" in line and "'" not in line and '"' not in line:
            out.append(line[: line.index(" #")])
        else:
            out.append(line)
    return "\n".join(out)


def substitute_document(chunk: str, source: str, vars: Mapping[str, str]) -> str:
    """One YAML document of a Kustomization's path with its variables substituted (unless the
    object disables it); BuildError names the object as kustomize-controller does."""
    value = yamlio.load_one(chunk, source) if "${" in chunk else None
    if not isinstance(value, Mapping) or disabled(value):
        return chunk
    try:
        # kustomize-controller substitutes the object as re-serialised YAML: comments are gone
        return substitute(_without_comments(chunk), vars)
    except BuildError as err:
        raise BuildError(f"post build failed for '{gvk_name(value)}': envsubst error: {err}") from None


def substituted_files(
    files: Sequence[tuple[str, str]],
    owner_of: Callable[[str], str | None],
    kustomizations: Mapping[str, Mapping[str, Any]],
    objects: Sequence[Mapping[str, Any]],
) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    """``files`` with each document substituted by the variables of the Kustomization that
    applies it (``owner_of(file)``: a ref of ``kustomizations``), the build error of each
    Kustomization whose build fails, and notes for forms not evaluated."""
    vars_of: dict[str, dict[str, str]] = {}
    errors: dict[str, str] = {}
    load_errors: dict[str, str] = {}
    for ref, ks in kustomizations.items():
        try:
            found = variables(ks, objects)
        except BuildError as err:
            load_errors[ref] = str(err)
            continue
        if found:
            vars_of[ref] = found
    out: list[tuple[str, str]] = []
    notes: list[str] = []
    for file, text in files:
        owner = owner_of(file)
        if owner is None:
            out.append((file, text))
            continue
        ref = owner
        if ref in load_errors and ref not in errors:
            # SubstituteVariables loads the variables for each object: the first one fails
            first = next(
                (v for c, _ in yamlio.split_documents(text) if isinstance(v := yamlio.load_one(c, file), Mapping) and not disabled(v)),
                None,
            )
            if first is not None:
                errors[ref] = f"post build failed for '{gvk_name(first)}': {load_errors[ref]}"
        if ref not in vars_of or "${" not in text:
            out.append((file, text))
            continue
        new = text
        pos = 0
        for chunk, _line in yamlio.split_documents(text):
            at = new.find(chunk, pos)
            try:
                done = substitute_document(chunk, file, vars_of[ref])
            except Unsupported as err:
                notes.append(f"Kustomization {ref}: postBuild form ${{{err}}} in {file} is not evaluated (left as written)")
                done = chunk
            except BuildError as err:
                errors.setdefault(ref, str(err))
                done = chunk
            if at >= 0:
                new = new[:at] + done + new[at + len(chunk):]
                pos = at + len(done)
        out.append((file, new))
    for failed, message in load_errors.items():
        errors.setdefault(failed, message)  # no object under its path: the error as LoadVariables gives it
    return out, errors, notes
