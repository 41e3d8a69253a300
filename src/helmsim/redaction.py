"""The one rule for what is a secret, applied to every output (docs/security.md#secrets).

Two halves, used together:

- :func:`redact_object` walks a Kubernetes object (or a ``kind: List`` of them): Secret
  ``data``/``stringData``, the ``kubectl.kubernetes.io/last-applied-configuration`` annotation,
  scalars under secret-like keys (:func:`is_secret_key`), the ``value`` of an env var with a
  secret-like ``name``; every string in it also goes through :func:`scrub`.
- :func:`scrub` finds secret-like *values* in any text (a message, a config file in a
  ConfigMap, an error): ``Bearer``/``Basic`` credentials, ``-u user:pw``, ``mysql -pPW``, URL
  userinfo, ``key: value`` / ``key=value`` pairs with a secret-like key (so docker ``auths``
  JSON, ``PGPASSWORD=…``, ``"password": "…"``), PEM private keys, JWTs and base64 docker
  configs.

A secret is replaced by :func:`secret_hash` — ``<redacted:sha256:0123456789ab>``, the first 12
hex digits of its SHA-256 — so a change still shows as two different hashes. The same input
always gives the same output. ``helmsim render --show-secrets`` is the one way to see them.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

_T = TypeVar("_T")

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
TOKEN = re.compile(r"<redacted:sha256:[0-9a-f]{12}>")


def secret_hash(value: Any) -> str:
    """What is printed instead of a secret: a short SHA-256 of its text (not salted: the
    same secret gives the same hash everywhere, so a guessable one can be confirmed)."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return f"<redacted:sha256:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}>"


# --- keys ------------------------------------------------------------------------------------------

# A word of a key that names secret material.
_SECRET_WORDS = frozenset(
    {
        "pass", "passwd", "password", "passwords", "passphrase", "pwd", "pw",
        "token", "tokens", "secret", "secrets", "key", "keys", "auth", "authorization",
        "credential", "credentials", "cred", "creds", "apikey", "privatekey", "accesskey",
        "secretkey", "authtoken", "passcode", "pin",
    }
)
# ... also found inside one unseparated word (PGPASSWORD, dbpassword, clientsecret).
_SECRET_INFIXES = ("passw", "passphrase", "secret", "token", "credential", "apikey", "privatekey")
# Words of the material itself: every scalar under such a key is a secret (passwords.admin).
_MATERIAL_WORDS = frozenset(
    {
        "pass", "passwd", "password", "passwords", "passphrase", "pwd", "token", "tokens",
        "secret", "secrets", "credential", "credentials", "creds", "apikey",
    }
)
# A last word that makes the key name, locate or describe a secret rather than hold it
# (secretName, tokenPath, passwordFile, keyRef, existingSecret, tokenTTL, keySize), or name whom
# it belongs to (auth.username).
_REFERENCE_LAST = frozenset(
    {
        "name", "names", "ref", "refs", "reference", "path", "paths", "file", "files", "dir",
        "directory", "mount", "mountpath", "selector", "namespace", "type", "kind", "length",
        "size", "bits", "ttl", "expiry", "expiration", "expires", "duration", "lifetime",
        "interval", "period", "timeout", "age", "enabled", "enable", "disabled", "required",
        "optional", "create", "generate", "rotate", "rotation", "format", "encoding",
        "algorithm", "version", "id", "ids", "count", "url", "uri", "endpoint", "issuer",
        "audience", "provider", "method", "mode", "strategy", "policy", "source", "field",
        "prefix", "suffix", "hint", "pattern", "regex", "env", "var", "header", "scope",
        "scopes", "usage", "usages", "store", "class", "template", "annotations", "labels",
        "config", "configuration", "manager", "from",
        # who, not what proves it: auth.username, basicAuth.user (a password's holder is no secret)
        "username", "usernames", "user", "users", "login", "email",
    }
)
_REFERENCE_FIRST = frozenset({"existing", "use"})
# A word anywhere that makes the value a digest or pointer (checksum/secret, inject-ca-from-secret).
_REFERENCE_ANY = frozenset({"checksum", "hash", "digest", "sha", "sha256", "fingerprint", "from"})
# Words before `key(s)` that make it a structural key, not key material (topologyKey,
# matchLabelKeys, publicKey, sortKey, partitionKey).
_STRUCTURAL_KEY_QUALIFIERS = frozenset(
    {
        "topology", "label", "labels", "annotation", "annotations", "match", "node", "sort",
        "partition", "primary", "foreign", "routing", "hash", "cache", "lookup", "group",
        "idempotency", "public", "object", "field", "column", "index", "map", "shard",
    }
)
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


# A report judges the same few hundred keys tens of thousands of times (every object's fields,
# every message's key=value pairs) and scrubs the same texts in every finding's chain (a
# 1,000-object check: 1,600 texts of 8-9 KB, most of them repeated): each key and text is judged
# once (the answers are functions of the argument alone) while the arguments kept stay under a
# budget of characters; past it the cache starts again.
_CACHE_BUDGET = 1 << 24
"""Characters of arguments one cache keeps (16 Mi: at most a few tens of MB)."""


def _cached(fn: Callable[[str], _T], budget: int = _CACHE_BUDGET) -> Callable[[str], _T]:
    """``fn`` with its answers kept while the arguments kept total at most ``budget`` characters."""
    kept: dict[str, _T] = {}
    size = 0

    def call(arg: str) -> _T:
        nonlocal size
        found = kept.get(arg, kept)
        if found is not kept:
            return found  # type: ignore[return-value]
        answer = fn(arg)
        if len(arg) <= budget:
            if size + len(arg) > budget:
                kept.clear()
                size = 0
            kept[arg] = answer
            size += len(arg)
        return answer

    functools.update_wrapper(call, fn)
    return call


def key_words(key: str) -> list[str]:
    """A key's words, lower case: ``DB-PASS`` → db, pass; ``apiKey`` → api, key."""
    return list(_words(key))


def _split_words(key: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in _WORD_SPLIT.split(key) if w)


_words = _cached(_split_words)


def _is_reference(words: list[str]) -> bool:
    return (
        words[-1] in _REFERENCE_LAST
        or words[0] in _REFERENCE_FIRST
        or not _REFERENCE_ANY.isdisjoint(words)
    )


def _names_only(words: list[str]) -> bool:
    """A key that names or describes (``name``, ``key``, ``enabled``…), even among secrets."""
    return not words or _is_reference(words) or words in (["key"], ["keys"])


def _judge_key(key: str) -> bool:
    """Whether a scalar under ``key`` is a secret: one of its words (case- and
    separator-insensitive) names secret material — pass, passwd, password, token, secret, key,
    auth, credential and their forms — and the key does not merely name, locate or describe a
    secret (``secretName``, ``tokenPath``, ``keyRef``, ``existingSecret``). The bare key ``key``
    (``secretKeyRef.key``, a toleration's or selector's ``key``) and structural keys
    (``topologyKey``, ``publicKey``) are not secrets."""
    words = key_words(key)
    if not words or _is_reference(words):
        return False
    if words in (["key"], ["keys"]):
        return False
    for i, word in enumerate(words):
        if word in ("key", "keys"):
            if i > 0 and words[i - 1] in _STRUCTURAL_KEY_QUALIFIERS:
                continue
            return True
        if word in _SECRET_WORDS or any(infix in word for infix in _SECRET_INFIXES):
            return True
    return False


is_secret_key = _cached(_judge_key)


# A value that points at a secret instead of holding it: an absolute path of two or more
# segments (--webhook-key=/etc/certs/key), or a shell/Kubernetes expansion ($(DB_PASSWORD),
# ${TOKEN:-}, $(< "$FILE"), $PASSWORD) that a script or the kubelet fills in at run time.
_PATH = re.compile(r"/[\w.@+-]+(?:/[\w.@+-]+)+/?")
_EXPANSION = re.compile(r"\$(?:[({]|[A-Za-z_])")
# ${VAR:-default}, ${VAR=default}, …: the default is a literal (it may be the secret itself)
_DEFAULTED = re.compile(r"\$\{[^}]*?[-=?+][^}]*\}")


def is_pointer(value: str) -> bool:
    """Whether ``value`` names where a secret is (a file path, ``$(VAR)``) rather than holds it."""
    return _PATH.fullmatch(value) is not None or _EXPANSION.match(value) is not None


def _is_material_key(key: str) -> bool:
    words = key_words(key)
    return bool(words) and is_secret_key(key) and words[-1] in _MATERIAL_WORDS


# --- values in text --------------------------------------------------------------------------------

_PUBLIC_PEM = frozenset(
    {
        "CERTIFICATE", "TRUSTED CERTIFICATE", "X509 CERTIFICATE", "X509 CRL", "CERTIFICATE REQUEST",
        "NEW CERTIFICATE REQUEST", "PUBLIC KEY", "RSA PUBLIC KEY", "PGP PUBLIC KEY BLOCK",
        "SSH2 PUBLIC KEY", "PKCS7", "CMS",
    }
)
_PEM = re.compile(
    r"-----BEGIN ([A-Z0-9 ]+)-----(?:.*?-----END \1-----|.*\Z)", re.DOTALL
)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_BASE64_JSON = re.compile(r"\be[wy][A-Za-z0-9+/]{14,}={0,2}")  # base64 of '{"' or '{\\n'
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)([A-Za-z0-9\-._~+/]{8,}=*)")
_BASIC = re.compile(r"(?i)\b(basic)(\s+)([A-Za-z0-9+/]{4,}={0,2})")
_USER_FLAG = re.compile(
    r"(?<![\w-])(-u|-U|--user|--proxy-user|--basic-auth|--creds)(\s+|=)?(['\"]?)([^\s'\":@/]+):([^\s'\"]+)(\3)"
)
_MYSQL = re.compile(
    r"\b(?:mysql|mysqldump|mysqladmin|mysqlsh|mysqlimport|mysqlcheck|mysqlpump|mariadb|mariadb-dump)\b[^\n;&|]*"
)
_GLUED_P = re.compile(r"(?<=\s)-p(?:'(?P<sq>[^'\n]+)'|\"(?P<dq>[^\"\n]+)\"|(?P<bare>[^\s'\"]+))")
_URL_USERINFO = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)([^\s/@:'\"]+)(?::([^\s/@'\"]*))?@")
_LONG_USER = 20  # userinfo without a password: a token (GitHub's https://TOKEN@github.com)
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate"})
_NOT_SECRET_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "~", "none", "nil"})
_KEY_VALUE = re.compile(
    r"(?:(?<![\w./\\-])|(?<=--)|(?<=\s-)|(?<=^-))(?P<q>\\?[\"']?)(?P<key>[A-Za-z_][\w.-]*)(?P=q)[ \t]*(?P<sep>:|=(?!=))[ \t]*"
    r"(?P<value>\\\"(?:[^\"\\\n]|\\[^\"\n])*\\\"|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'"
    r"|[^\s,;&}\]\"']+(?:[ \t]+[^\s,;&}\]\"']+)*)?"
)
_BLOCK_INDICATOR = re.compile(r"[|>][+-]?[0-9]?\Z")


def _hash_sub(match: re.Match[str], group: int | str) -> str:
    """The match with one group replaced by its hash."""
    start, end = match.span(group)
    whole = match.group(0)
    offset = match.start(0)
    return whole[: start - offset] + secret_hash(match.group(group)) + whole[end - offset :]


def _pem(m: re.Match[str]) -> str:
    return m.group(0) if m.group(1).strip() in _PUBLIC_PEM else secret_hash(m.group(0))


def _basic(m: re.Match[str]) -> str:
    token = m.group(3)
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    return _hash_sub(m, 3) if b":" in decoded else m.group(0)


def _bearer(m: re.Match[str]) -> str:
    token = m.group(3)
    if TOKEN.fullmatch(token) or not re.search(r"[0-9\-._~+/=]", token):
        return m.group(0)  # prose ("bearer authentication"), or already redacted
    return _hash_sub(m, 3)


def _docker_b64(m: re.Match[str]) -> str:
    """A base64 docker config (``{"auths": …}``), as in a ``.dockerconfigjson``."""
    run = m.group(0)
    try:
        decoded = base64.b64decode(run + "=" * (-len(run) % 4))
    except (binascii.Error, ValueError):
        return run
    return secret_hash(run) if b'"auths"' in decoded else run


def _user_flag(m: re.Match[str]) -> str:
    pw = m.group(5)
    return m.group(0) if TOKEN.fullmatch(pw) or is_pointer(pw) else _hash_sub(m, 5)


def _glued_p(p: re.Match[str]) -> str:
    group = next(g for g in ("sq", "dq", "bare") if p.group(g) is not None)
    value = p.group(group)
    return p.group(0) if TOKEN.fullmatch(value) or is_pointer(value) else _hash_sub(p, group)


def _mysql(m: re.Match[str]) -> str:
    return _GLUED_P.sub(_glued_p, m.group(0))


def _url(m: re.Match[str]) -> str:
    if "<redacted:" in m.group(0):
        return m.group(0)
    if m.group(3) is not None:
        return _hash_sub(m, 3) if m.group(3) and not is_pointer(m.group(3)) else m.group(0)
    return _hash_sub(m, 2) if len(m.group(2)) >= _LONG_USER else m.group(0)


def _quoted(value: str) -> tuple[str, str, str]:
    """(opening quote, body, closing quote) of a value as written."""
    for q in ('\\"', '"', "'"):
        if len(value) >= 2 * len(q) and value.startswith(q) and value.endswith(q):
            return q, value[len(q) : -len(q)], q
    return "", value, ""


def _key_value(text: str) -> str:
    """Hash the values of ``key: value`` / ``key=value`` pairs whose key is secret-like."""
    out: list[str] = []
    pos = 0  # text before pos is in out
    search_at = 0
    while (m := _KEY_VALUE.search(text, search_at)) is not None:
        # A pair that is not a secret may hide one in its value ("x: password=…"): look
        # again right after its separator.
        search_at = m.end("sep")
        replaced = _pair(text, m)
        if replaced is None:
            continue
        replacement, end = replaced
        out.append(text[pos : m.start("value")])
        out.append(replacement)
        pos = search_at = end
    out.append(text[pos:])
    return "".join(out)


def _pair(text: str, m: re.Match[str]) -> tuple[str, int] | None:
    """The replacement of a pair's value and where it ends, or None to keep the pair."""
    value = m.group("value")
    key, sep = m.group("key"), m.group("sep")
    if not value or not is_secret_key(key):
        return None
    if sep == ":" and key_words(key) == ["pass"] and not m.group("q"):
        return None  # "PASS: report written to …" is a verdict; pass=… and "pass": … still count
    open_q, body, close_q = _quoted(value)
    start, end = m.start("value"), m.end("value")
    if not open_q and sep == "=":
        body = body.split()[0]  # KEY=value ends at a blank (a shell word, a query)
        end = start + len(body)
    nested = sep == ":" and body.startswith(("{", "["))  # judged key by key
    if not body or nested or body.startswith("<redacted:sha256:"):
        return None
    if not open_q and (body.lower() in _NOT_SECRET_WORDS or is_pointer(body)):
        return None  # a boolean (automountServiceAccountToken: true), a path, $(VAR)
    if open_q and is_pointer(body) and not _DEFAULTED.search(body):
        return None  # "$(< "$PASSWORD_FILE")", "${PASSWORD}": the shell reads it from elsewhere
    first = body.split(None, 1)[0].lower()
    if first in _SCHEMES and (body.lower() == first or TOKEN.search(body)):
        return None  # "Authorization: Bearer <redacted …>": the scheme rules did it
    if not open_q and sep == ":" and _BLOCK_INDICATOR.match(body):
        block_end = _block_end(text, m)
        block = text[end:block_end]
        if not block.strip() or TOKEN.fullmatch(block.strip()):
            return None
        return body + "\n" + _indent_of(block) + secret_hash(block.strip("\n")), block_end
    return open_q + secret_hash(body) + close_q, end


def _indent_of(block: str) -> str:
    first = next((ln for ln in block.split("\n") if ln.strip()), "")
    return first[: len(first) - len(first.lstrip())]


def _block_end(text: str, m: re.Match[str]) -> int:
    """Where a YAML block scalar (``password: |``) after ``m`` ends: before the first
    non-blank line indented no deeper than the key."""
    line_start = text.rfind("\n", 0, m.start("key")) + 1
    key_indent = len(text[line_start : m.start("key")].replace("-", " ").rstrip("\"'"))
    end = text.find("\n", m.end("value"))
    if end == -1:
        return len(text)
    while end < len(text):
        nxt = text.find("\n", end + 1)
        line = text[end + 1 : nxt if nxt != -1 else len(text)]
        if line.strip() and len(line) - len(line.lstrip(" ")) <= key_indent:
            break
        end = nxt if nxt != -1 else len(text)
    return end


_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (_PEM, _pem),
    (_JWT, lambda m: secret_hash(m.group(0))),
    (_BASE64_JSON, _docker_b64),
    (_BEARER, _bearer),
    (_BASIC, _basic),
    (_USER_FLAG, _user_flag),
    (_MYSQL, _mysql),
    (_URL_USERINFO, _url),
)
# Cheap pre-check: text without any of these cannot hold a secret-like value.
_MAYBE = re.compile(
    r"(?i)-----BEGIN|eyJ|bearer|basic|-u|--user|--proxy-user|--basic-auth|--creds|mysql|mariadb|://|[:=]"
)


def scrub(text: str) -> str:
    """``text`` with every secret-like value replaced by its hash (see the module docstring);
    text already scrubbed comes back unchanged."""
    if not text or not _MAYBE.search(text):
        return text
    return _scrubbed(text)


def _scrub_all(text: str) -> str:
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return _key_value(text)


_scrubbed = _cached(_scrub_all)


def clip(text: str, limit: int) -> str:
    """``text`` scrubbed, then cut to ``limit`` characters (with …): cutting first could leave
    part of a secret that no longer looks like one."""
    text = scrub(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def scrub_data(value: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, strings, scalars) with every string scrubbed."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {scrub(k) if isinstance(k, str) else k: scrub_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_data(v) for v in value]
    return value


# --- objects ---------------------------------------------------------------------------------------

_LABEL_MAPS = frozenset({"labels", "matchLabels", "nodeSelector", "selector"})


def _hide(value: Any) -> Any:
    """A secret scalar's replacement; booleans, nulls and empty strings say nothing and stay."""
    if value is None or isinstance(value, bool) or value == "":
        return value
    if isinstance(value, str) and (
        TOKEN.fullmatch(value) or is_pointer(value) or value.lower() in _NOT_SECRET_WORDS
    ):
        return value  # ALLOW_EMPTY_PASSWORD: "no", a file path, $(VAR): nothing to hide
    if isinstance(value, (list, tuple)):
        return [_hide(v) if not isinstance(v, (Mapping, list, tuple)) else _walk(v, True) for v in value]
    if isinstance(value, Mapping):
        return _walk(value, True)
    return secret_hash(value)


def _walk(value: Any, material: bool = False, labels: bool = False) -> Any:
    """Redact one node. ``material``: inside a key naming secret material, every scalar whose
    key is not a reference is secret. ``labels``: a label map, whose keys are not judged."""
    if isinstance(value, Mapping):
        env_secret = isinstance(value.get("name"), str) and is_secret_key(value["name"])
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = k if isinstance(k, str) else str(k)
            # An annotation is judged by its name (`vault.example/token`), unless its prefix
            # says the value is a digest (`checksum/secret`).
            prefix, _, name = key.rpartition("/")
            annotation_key = name if not prefix or _REFERENCE_ANY.isdisjoint(key_words(prefix)) else key
            words = key_words(annotation_key)
            if labels:
                out[k] = _walk(v, False, key in _LABEL_MAPS)
            elif (env_secret and key == "value") or (
                material and not _names_only(words) and not isinstance(v, (Mapping, list))
            ):
                out[k] = _hide(v)
            elif is_secret_key(annotation_key) and not isinstance(v, Mapping):
                out[k] = _hide(v)
            else:
                out[k] = _walk(v, material or _is_material_key(annotation_key), key in _LABEL_MAPS)
        return out
    if isinstance(value, list):
        return [_hide(v) if material and not isinstance(v, (Mapping, list)) else _walk(v, material) for v in value]
    if isinstance(value, str):
        return scrub(value)
    return value


def redact_object(obj: Any) -> Any:
    """A copy of a Kubernetes object with every secret replaced by :func:`secret_hash`.

    A Secret's ``data`` and ``stringData`` values are always hashed (databus23/helm-diff
    diff/diff.go redactSecrets never prints them either); so is the last-applied annotation,
    which holds the whole object as it was applied. Items of a ``kind: List`` (or
    ``SecretList``…) are objects of their own. Elsewhere the key and value rules apply.
    A CustomResourceDefinition gets the value rule only (its schema names fields, it holds no
    values). Non-mapping input is walked as data.
    """
    if not isinstance(obj, Mapping):
        return _walk(obj)
    kind = obj.get("kind")
    if kind == "CustomResourceDefinition":
        return scrub_data(obj)  # a schema: its `password` properties describe fields, hold none
    out = _walk(obj)
    if kind == "Secret":
        for section in ("data", "stringData"):
            values = obj.get(section)
            if isinstance(values, Mapping):
                out[section] = {k: _hide(v) if v != "" else v for k, v in values.items()}
            elif values is not None:
                out[section] = _hide(values)
    if isinstance(kind, str) and kind.endswith("List") and isinstance(obj.get("items"), list):
        out["items"] = [redact_object(item) for item in obj["items"]]
    meta = out.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), Mapping):
        annotations = dict(meta["annotations"])
        if LAST_APPLIED in annotations:
            annotations[LAST_APPLIED] = _hide(obj["metadata"]["annotations"][LAST_APPLIED])
            out["metadata"] = {**meta, "annotations": annotations}
    return out


__all__ = [
    "LAST_APPLIED",
    "TOKEN",
    "clip",
    "is_secret_key",
    "key_words",
    "redact_object",
    "scrub",
    "scrub_data",
    "secret_hash",
]
