"""Null means absent, as the API server's decoding reads it.

kube-apiserver decodes a request body into Go structs (k8s.io/apimachinery pkg/runtime/serializer
json: a JSON ``null`` leaves a pointer, map or slice field nil and a scalar field its zero value),
so ``metadata.annotations:`` with nothing under it, ``labels: null`` or ``resources: null`` are
stored as if the key were absent; custom resources get the same from structural pruning
(k8s.io/apiextensions-apiserver pkg/apiserver/schema/defaulting: nulls of non-nullable fields are
dropped). ``drop_nulls`` applies that reading to a decoded YAML document.
"""

from __future__ import annotations

from typing import Any


def drop_nulls(value: Any) -> Any:
    """Remove every mapping entry whose value is ``None``, at any depth, in place; return ``value``.

    List items are kept as they are: a ``null`` item has no key to drop, and what it decodes to
    depends on the item type (the manifest validation reads it against the schema).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            dead = [k for k, v in item.items() if v is None]
            for k in dead:
                del item[k]
            stack.extend(v for v in item.values() if type(v) is dict or type(v) is list)
        elif type(item) is list:
            stack.extend(v for v in item if type(v) is dict or type(v) is list)
    return value
