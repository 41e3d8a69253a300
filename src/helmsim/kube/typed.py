"""What kube-apiserver says about an object whose fields do not fit its type, as Helm v4 sends it.

Helm v4 creates and patches with server-side apply (helm/helm pkg/kube/client.go
patchResourceServerSide, fieldValidation=Strict). The apiserver first converts the applied object
to its typed form (k8s.io/apimachinery pkg/util/managedfields/internal/structuredmerge.go Apply:
``failed to create typed patch object (<ns>/<name>; <gvk>): <errors>``), with
sigs.k8s.io/structured-merge-diff ``typed/validate.go`` rules: scalars must have their type, maps
and lists their shape, keyed list items their keys, and a field the schema does not declare is
refused. Then the object is validated (``<Kind>.<group> "<name>" is invalid: …``); of that
hand-written validation helmsim checks the fields the OpenAPI schema marks required.

The walker reads the OpenAPI/JSON schema directly (built-in definitions or a CRD's
``openAPIV3Schema``). The apiserver visits a map's keys in Go map order (random); helmsim visits
them in document order, so several errors may be listed in another order than the server's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from msgspec import Struct

Schema = Mapping[str, Any]

# The element types of a keyed list whose key has a default (k8s.io/api core/v1 types.go
# ``+default="TCP"`` on ContainerPort.protocol, ServicePort.protocol, EndpointPort.protocol):
# structured-merge-diff uses the default when the item omits the key (typed/helpers.go).
_KEY_DEFAULTS: dict[str, dict[str, Any]] = {
    "io.k8s.api.core.v1.ContainerPort": {"protocol": "TCP"},
    "io.k8s.api.core.v1.ServicePort": {"protocol": "TCP"},
    "io.k8s.api.core.v1.EndpointPort": {"protocol": "TCP"},
}

# Required fields that are pointers to structs in the Go types: absent means nil, which the
# validation reports as Required (k8s.io/kubernetes pkg/apis/apps/validation/validation.go:
# ``if spec.Selector == nil { field.Required(fldPath.Child("selector"), "") }``). Other required
# struct fields are values: absent means the zero struct, whose own fields are then validated.
_POINTER_STRUCTS: frozenset[tuple[str, str]] = frozenset(
    {
        ("io.k8s.api.apps.v1.DeploymentSpec", "selector"),
        ("io.k8s.api.apps.v1.ReplicaSetSpec", "selector"),
        ("io.k8s.api.apps.v1.StatefulSetSpec", "selector"),
        ("io.k8s.api.apps.v1.DaemonSetSpec", "selector"),
    }
)


class FieldError(Struct, frozen=True):
    """One structured-merge-diff validation error: a path such as ``.spec.replicas`` and a text."""

    path: str
    message: str

    def __str__(self) -> str:
        # typed/helpers.go ValidationError.Error
        return f"{self.path}: {self.message}" if self.path else self.message


def errors_text(errs: list[FieldError]) -> str:
    """typed/helpers.go ValidationErrors.Error: one error alone, else ``errors:`` and one per line."""
    if len(errs) == 1:
        return str(errs[0])
    return "\n".join(["errors:", *(f"  {e}" for e in errs)])


_Resolved = tuple[Schema, Schema, str, str]
"""(the node asked about, the node its ``$ref`` chain ends at, that definition's name, its shape)."""

# Per definitions mapping (kept alive beside its memo): each schema node resolved once. The
# built-in definitions are loaded once per Kubernetes version, so every object of a run shares
# them; a CRD's definitions are a new mapping per call and get a memo of their own.
_MEMOS: dict[int, tuple[Mapping[str, Schema], dict[int, _Resolved]]] = {}
_MAX_MEMOS = 64


def _memo(defs: Mapping[str, Schema]) -> dict[int, _Resolved]:
    hit = _MEMOS.get(id(defs))
    if hit is None or hit[0] is not defs:
        if len(_MEMOS) >= _MAX_MEMOS:
            _MEMOS.clear()
        hit = _MEMOS[id(defs)] = (defs, {})
    return hit[1]


class _Walker:
    def __init__(self, defs: Mapping[str, Schema]) -> None:
        self.defs = defs
        self.errors: list[FieldError] = []
        self._resolved = _memo(defs)

    def _lookup(self, node: Schema) -> _Resolved:
        hit = self._resolved.get(id(node))
        if hit is None or hit[0] is not node:
            target, name = node, ""
            seen = 0
            while "$ref" in target and seen < 64:
                name = str(target["$ref"]).rsplit("/", 1)[-1]
                target = self.defs.get(name, {})
                seen += 1
            hit = (node, target, name, _shape(target))
            if len(self._resolved) < 100_000:  # the schemas are finite; a bound all the same
                self._resolved[id(node)] = hit
        return hit

    def resolve(self, node: Schema) -> tuple[Schema, str]:
        _, target, name, _shape_ = self._lookup(node)
        return target, name

    def walk(self, value: Any, node: Schema, path: str) -> None:
        _, node, _name, shape = self._lookup(node)
        if value is None:
            return  # null is a valid value of every type (typed/validate.go, helpers.go)
        if shape == "any":
            return
        if shape in ("numeric", "string", "boolean", "scalar"):
            self._scalar(value, shape, path)
        elif shape == "map":
            self._map(value, node, path)
        else:
            self._list(value, node, path)

    def _scalar(self, value: Any, shape: str, path: str) -> None:
        # typed/validate.go validateScalar (the type is deduced from the value first)
        if shape == "numeric" and not _is_number(value):
            self.errors.append(FieldError(path, f"expected numeric (int or float), got {_go_type(value)}"))
        elif shape == "string" and not isinstance(value, str):
            self.errors.append(FieldError(path, f"expected string, got &value.valueUnstructured{{Value:{_go_sharp(value)}}}"))
        elif shape == "boolean" and not isinstance(value, bool):
            self.errors.append(FieldError(path, f"expected boolean, got &{{{_go_v(value)}}}"))
        elif shape == "scalar" and isinstance(value, (dict, list)):
            self.errors.append(FieldError(path, f"expected any scalar, got &{{{_go_v(value)}}}"))

    def _map(self, value: Any, node: Schema, path: str) -> None:
        if not isinstance(value, dict):
            # typed/helpers.go mapValue
            self.errors.append(FieldError(path, f"expected map, got &{{{_go_v(value)}}}"))
            return
        props: Mapping[str, Schema] = node.get("properties") or {}
        extra = node.get("additionalProperties")
        open_ = node.get("x-kubernetes-preserve-unknown-fields") is True
        for key, sub in value.items():
            key = str(key)
            if key in props:
                self.walk(sub, props[key], f"{path}.{key}")
            elif isinstance(extra, Mapping):
                self.walk(sub, extra, f"{path}.{key}")
            elif open_ or extra is True:
                continue
            else:
                # typed/validate.go visitMapItems: reported, and the walk of this map stops
                self.errors.append(FieldError(f"{path}.{key}", "field not declared in schema"))
                return

    def _list(self, value: Any, node: Schema, path: str) -> None:
        if not isinstance(value, list):
            # typed/helpers.go listValue
            self.errors.append(FieldError(path, f"expected list, got &{{{_go_v(value)}}}"))
            return
        items: Schema = node.get("items") or {}
        kind = node.get("x-kubernetes-list-type")
        keys = [str(k) for k in node.get("x-kubernetes-list-map-keys") or ()]
        _item_node, item_name = self.resolve(items)
        for i, item in enumerate(value):
            if kind == "map" and keys:
                element, err = _keyed_element(item, keys, _KEY_DEFAULTS.get(item_name, {}))
            elif kind == "set":
                element, err = _set_element(item)
            else:
                element, err = f"[{i}]", None
            if err is not None:
                # typed/validate.go visitListItems: the element error bails out of the list
                self.errors.append(FieldError(path, f"element {i}: {err}"))
                return
            self.walk(item, items, path + element)


def _shape(node: Schema) -> str:
    """numeric | string | boolean | scalar (untyped) | map | list | any (deduced)."""
    if node.get("x-kubernetes-int-or-string") or node.get("format") == "int-or-string":
        return "scalar"
    alternatives = node.get("oneOf") or node.get("anyOf")
    types = _types(node)
    if alternatives and not types:
        for alt in alternatives:
            types |= _types(alt)
        if types and types <= {"string", "integer", "number", "boolean"}:
            return "scalar"
        return "any"
    if not types:
        return "map" if node.get("properties") else "any"
    if len(types) > 1:
        return "scalar" if types <= {"string", "integer", "number", "boolean"} else "any"
    (t,) = types
    if t in ("integer", "number"):
        return "numeric"
    if t in ("string", "boolean"):
        return t
    if t == "array":
        return "list"
    if t == "object":
        if node.get("properties") or isinstance(node.get("additionalProperties"), Mapping):
            return "map"
        return "any"  # an object with no declared fields: untyped (deduced)
    return "any"


def _types(node: Schema) -> set[str]:
    t = node.get("type")
    if isinstance(t, str):
        return {t} - {"null"}
    if isinstance(t, list):
        return {str(x) for x in t} - {"null"}
    return set()


def _keyed_element(item: Any, keys: list[str], defaults: Mapping[str, Any]) -> tuple[str, str | None]:
    """typed/helpers.go keyedAssociativeListItemToPathElement: ``[k=v,…]`` or the error."""
    if item is None:
        return "", "associative list with keys may not have a null element"
    if not isinstance(item, dict):
        return "", "associative list with keys may not have non-map elements"
    present = {k: item[k] if k in item else defaults[k] for k in keys if k in item or k in defaults}
    if not present:
        return "", (
            f"associative list with keys has an element that omits all key fields {_go_quote_list(keys)} "
            "(and doesn't have default values for any key fields)"
        )
    parts = [f"{k}={_smd_string(v)}" for k, v in sorted(present.items())]
    return "[" + ",".join(parts) + "]", None


def _set_element(item: Any) -> tuple[str, str | None]:
    """typed/helpers.go setItemToPathElement."""
    if isinstance(item, dict):
        return "", "associative list without keys has an element that's a map type"
    if isinstance(item, list):
        return "", "associative list without keys has an element that's a list type"
    return f"[={_smd_string(item)}]", None


# --- Go formatting of unstructured values ---------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _go_float(x: float) -> str:
    """fmt's %v of a float64: strconv 'g' with the shortest digits, the exponent form when the
    exponent is < -4 or >= 6 (strconv/ftoa.go: "if precision was the shortest possible, use
    precision 6 for this decision")."""
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if math.isnan(x):
        return "NaN"
    if x == 0:
        return "0"
    digits = repr(float(x)).lower()
    mantissa, _, exp_text = digits.partition("e")
    sign = "-" if mantissa.startswith("-") else ""
    mantissa = mantissa.lstrip("-")
    int_part, _, frac = mantissa.partition(".")
    exp = int(exp_text) if exp_text else 0
    all_digits = (int_part + frac).lstrip("0")
    lead_zeros = len(int_part + frac) - len((int_part + frac).lstrip("0"))
    point = len(int_part) + exp - lead_zeros  # digits before the decimal point
    all_digits = all_digits.rstrip("0") or "0"
    e = point - 1
    if e < -4 or e >= 6:
        head, tail = all_digits[0], all_digits[1:]
        return f"{sign}{head}{'.' + tail if tail else ''}e{'+' if e >= 0 else '-'}{abs(e):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{all_digits}"
    if point >= len(all_digits):
        return f"{sign}{all_digits}{'0' * (point - len(all_digits))}"
    return f"{sign}{all_digits[:point]}.{all_digits[point:]}"


def _go_number(value: float) -> str:
    # kube-apiserver decodes the applied object with encoding/json into interface{}: float64
    return _go_float(float(value))


def _go_v(value: Any) -> str:
    """fmt %v of a decoded JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _go_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(_go_v(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_v(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "]"
    return str(value)


def _go_sharp(value: Any) -> str:
    """fmt %#v of a decoded JSON value held in an interface{}."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _go_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_sharp(v) for v in value) + "}"
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(str(k), ensure_ascii=False)}:{_go_sharp(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
        return "map[string]interface {}{" + inner + "}"
    return str(value)


def _go_type(value: Any) -> str:
    """fmt %T of a decoded JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "float64"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def _smd_string(value: Any) -> str:
    """structured-merge-diff value.ToString (path element keys)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _go_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return _go_v(value)


def _go_quote_list(items: list[str]) -> str:
    """fmt %q of a []string."""
    return "[" + " ".join(json.dumps(i, ensure_ascii=False) for i in items) + "]"


# --- entry points ---------------------------------------------------------------------------------


def typed_errors(obj: Mapping[str, Any], root: Schema, defs: Mapping[str, Schema]) -> list[FieldError]:
    """structured-merge-diff's errors converting ``obj`` to the type ``root`` describes."""
    walker = _Walker(defs)
    walker.walk(dict(obj), root, "")
    return walker.errors


def required_errors(obj: Mapping[str, Any], root: Schema, defs: Mapping[str, Schema]) -> list[str]:
    """``<field path>: Required value`` for each field the schema marks required and ``obj`` lacks
    (k8s.io/apimachinery pkg/util/validation/field errors.go Required), in document order."""
    walker = _Walker(defs)
    out: list[str] = []

    def visit(value: Any, node: Schema, path: str, depth: int) -> None:
        node, name = walker.resolve(node)
        if depth > 64:
            return
        shape = _shape(node)
        if shape == "map" and isinstance(value, dict):
            props: Mapping[str, Schema] = node.get("properties") or {}
            for req in node.get("required") or ():
                if value.get(req) is None and req in props:
                    sub, _ = walker.resolve(props[req])
                    if _shape(sub) == "map" and (name, req) not in _POINTER_STRUCTS:
                        visit({}, props[req], _join(path, req), depth + 1)  # the zero struct
                    else:
                        out.append(f"{_join(path, req)}: Required value")
            if value.get("spec") is None and "spec" in props and "spec" not in (node.get("required") or ()):
                # ``Spec XSpec `json:"spec,omitempty"``` is a value in the Go types (k8s.io/api
                # apps/v1, batch/v1, core/v1 PodTemplateSpec): absent, its zero value is validated
                sub, _ = walker.resolve(props["spec"])
                if _shape(sub) == "map":
                    visit({}, props["spec"], _join(path, "spec"), depth + 1)
            for key, sub in value.items():
                if key in props:
                    visit(sub, props[key], _join(path, str(key)), depth + 1)
                elif isinstance(node.get("additionalProperties"), Mapping):
                    visit(sub, node["additionalProperties"], f"{path}[{key}]", depth + 1)
        elif shape == "list" and isinstance(value, list):
            for i, item in enumerate(value):
                visit(item, node.get("items") or {}, f"{path}[{i}]", depth + 1)

    visit(dict(obj), root, "", 0)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
