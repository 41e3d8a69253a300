"""``helmsim profiles diff A B``: what differs between two resolved profiles.

Both profiles are compared fully resolved (``extends`` applied, defaults filled in). Lists of
named things are matched by their identity, not their position: nodes and StorageClasses by
name, CRDs by group/version/kind, cluster policies by kind/namespace/name, ``apiVersions`` as a
set; order matters only for StorageClasses (the last default wins), which is reported when the
same classes appear in another order.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from msgspec import Struct

from helmsim.cluster.profile import ClusterProfile

_MISSING = object()


class Difference(Struct, frozen=True):
    """One path whose value differs; ``a``/``b`` are ``None`` with ``only`` when one side lacks it."""

    path: str
    a: Any
    b: Any
    only: str = ""  # "a" or "b" when the path exists on one side only

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "a": self.a, "b": self.b}
        if self.only:
            out["only"] = self.only
        return out


def _policy_key(p: Any) -> str:
    meta = p.get("metadata", {}) if isinstance(p, dict) else {}
    ns = meta.get("namespace")
    return "/".join(str(x) for x in (p.get("kind"), ns, meta.get("name")) if x)


_KEYS: dict[str, Callable[[Any], str]] = {
    "nodes": lambda n: str(n["name"]),
    "storageClasses": lambda c: str(c["name"]),
    "crds": lambda c: f"{c['group']}/{c['version']}/{c['kind']}",
    "clusterPolicies": _policy_key,
    "objects": _policy_key,  # kind/namespace/name, as for policies
}


def diff_profiles(a: ClusterProfile, b: ClusterProfile) -> list[Difference]:
    """Every difference between ``a`` and ``b`` (names and descriptions included)."""
    out: list[Difference] = []
    _walk(a.to_data(), b.to_data(), "", out)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(a: Any, b: Any, path: str, out: list[Difference]) -> None:
    if isinstance(a, dict) and isinstance(b, dict) and "dist" not in a and "dist" not in b:
        for key in list(a) + [k for k in b if k not in a]:
            sub = _join(path, key)
            if key not in b:
                out.append(Difference(sub, a[key], None, "a"))
            elif key not in a:
                out.append(Difference(sub, None, b[key], "b"))
            else:
                _walk(a[key], b[key], sub, out)
        return
    top = path.split(".")[-1]
    if isinstance(a, list) and isinstance(b, list) and top in _KEYS:
        key = _KEYS[top]
        amap = {key(x): x for x in a}
        bmap = {key(x): x for x in b}
        for k in list(amap) + [k for k in bmap if k not in amap]:
            sub = f"{path}[{k}]"
            if k not in bmap:
                out.append(Difference(sub, amap[k], None, "a"))
            elif k not in amap:
                out.append(Difference(sub, None, bmap[k], "b"))
            else:
                _walk(amap[k], bmap[k], sub, out)
        if top == "storageClasses":
            order_a = [k for k in amap if k in bmap]
            order_b = [k for k in bmap if k in amap]
            if order_a != order_b:
                out.append(Difference(f"{path} (order)", order_a, order_b))
        return
    if isinstance(a, list) and isinstance(b, list) and top == "apiVersions":
        for v in a:
            if v not in b:
                out.append(Difference(f"{path}[{v}]", v, None, "a"))
        for v in b:
            if v not in a:
                out.append(Difference(f"{path}[{v}]", None, v, "b"))
        return
    if a != b:
        out.append(Difference(path, a, b))


def show(value: Any) -> str:
    """A short one-line rendering of a value."""
    if isinstance(value, dict) and "dist" in value:
        rest = ", ".join(f"{k} {v}" for k, v in value.items() if k != "dist")
        return f"{value['dist']} ({rest})"
    if isinstance(value, (dict, list)):
        text = json.dumps(value, sort_keys=True)
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value)


def render_text(a: ClusterProfile, b: ClusterProfile, diffs: list[Difference]) -> str:
    """The differences as aligned text lines."""
    head = f"a: {a.name} ({' <- '.join(a.sources)})\nb: {b.name} ({' <- '.join(b.sources)})"
    if not diffs:
        return head + "\nno differences\n"
    width = min(48, max(len(d.path) for d in diffs))
    lines = [head, f"{len(diffs)} difference{'s' if len(diffs) != 1 else ''}"]
    for d in diffs:
        if d.only == "a":
            what = f"only in a: {show(d.a)}"
        elif d.only == "b":
            what = f"only in b: {show(d.b)}"
        else:
            what = f"{show(d.a)} -> {show(d.b)}"
        lines.append(f"  {d.path:<{width}}  {what}")
    return "\n".join(lines) + "\n"


def render_json(a: ClusterProfile, b: ClusterProfile, diffs: list[Difference]) -> str:
    """The differences as JSON."""
    return (
        json.dumps(
            {
                "a": {"name": a.name, "sources": list(a.sources)},
                "b": {"name": b.name, "sources": list(b.sources)},
                "differences": [d.to_dict() for d in diffs],
            },
            indent=2,
        )
        + "\n"
    )
