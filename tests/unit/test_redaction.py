"""The one secret-redaction rule (helmsim.redaction; docs/security.md#secrets)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.redaction import (
    LAST_APPLIED,
    TOKEN,
    clip,
    is_pointer,
    is_secret_key,
    redact_object,
    scrub,
    secret_hash,
)


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        # material, in any case and with any separator
        ("password", True),
        ("PASSWORD", True),
        ("DB_PASSWORD", True),
        ("DB-PASS", True),
        ("db.pass", True),
        ("pass_key", True),
        ("PGPASSWORD", True),  # one unseparated word
        ("passwd", True),
        ("dbPassphrase", True),
        ("token", True),
        ("API_TOKEN", True),
        ("bootstrapToken", True),
        ("clientSecret", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("apiKey", True),
        ("APIKey", True),
        ("x-api-key", True),
        ("privateKey", True),
        ("tls.key", True),
        ("ssh-privatekey", True),
        ("auth", True),
        ("Authorization", True),
        ("credentials", True),
        ("dbCreds", True),
        # naming, locating or describing a secret
        ("secretName", False),
        ("secretKeyRef", False),
        ("keyRef", False),
        ("existingSecret", False),
        ("useExistingSecret", False),
        ("tokenPath", False),
        ("passwordFile", False),
        ("tokenTTL", False),
        ("keySize", False),
        ("authType", False),
        ("secretNamespace", False),
        ("passwordSecretRef", False),
        # whom a secret belongs to, not the secret
        ("auth.username", False),
        ("basicAuth.user", False),
        ("AUTH_USER", False),
        ("userPassword", True),
        # the bare key `key` and structural keys
        ("key", False),
        ("keys", False),
        ("topologyKey", False),
        ("matchLabelKeys", False),
        ("publicKey", False),
        ("sortKey", False),
        # unrelated words that merely contain a secret word's letters
        ("author", False),
        ("monkey", False),
        ("keyboard", False),
        ("bypass", False),
        ("image", False),
        ("", False),
    ],
)
def test_secret_like_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_the_hash_is_short_stable_and_distinguishes_values() -> None:
    assert secret_hash("hunter2") == secret_hash("hunter2")
    assert secret_hash("hunter2") != secret_hash("hunter3")
    assert TOKEN.fullmatch(secret_hash("hunter2")) and TOKEN.fullmatch(secret_hash(1234))
    assert secret_hash(1234) == secret_hash("1234")  # the value's text


SCRUBBED = [
    # (text, the secret it holds, what must survive)
    ("Authorization: Bearer abc.DEF-123_token", "abc.DEF-123_token", "Authorization: Bearer "),
    ("curl -H 'Authorization: Basic YWRtaW46aHVudGVyMg==' x", "YWRtaW46aHVudGVyMg==", "curl -H"),
    ("curl -u admin:hunter2 https://x", "hunter2", "-u admin:"),
    ("curl --user=admin:hunter2 https://x", "hunter2", "--user=admin:"),
    ("mysql -uroot -phunter2 app", "hunter2", "mysql -uroot -p"),
    ("mysqldump -h db -p'hunter 2' app", "hunter 2", "mysqldump -h db"),
    ("postgres://app:hunter2@pg:5432/app", "hunter2", "postgres://app:"),
    ("https://ghp_0123456789abcdefghij@github.com/x", "ghp_0123456789abcdefghij", "@github.com/x"),
    ('{"auths":{"r.io":{"auth":"YWRtaW46aHVudGVyMg=="}}}', "YWRtaW46aHVudGVyMg==", '"auths"'),
    ('{"auths":{"r.io":{"username":"a","password":"hunter2"}}}', "hunter2", '"username":"a"'),
    (
        "eyJhdXRocyI6eyJyLmlvIjp7ImF1dGgiOiJZV1J0YVc0NmFIVnVkR1Z5TWc9PSJ9fX0=",
        "eyJhdXRocyI6eyJyLmlvIjp7ImF1dGgiOiJZV1J0YVc0NmFIVnVkR1Z5TWc9PSJ9fX0=",
        "",
    ),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIBhunter\n-----END RSA PRIVATE KEY-----", "MIIBhunter", ""),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn (cut)", "b3Blbn", ""),
    ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", "eyJzdWIiOiJ4In0", "token "),
    ("db:\n  host: pg\n  password: hunter 2\n  user: app\n", "hunter 2", "  user: app\n"),
    ("PGPASSWORD=hunter2 psql -h db", "hunter2", " psql -h db"),
    ("--db-password=hunter2 --host=db", "hunter2", "--host=db"),
    ('password = "hunter2"', "hunter2", 'password = "'),
    ("secrets:\n  token: |\n    line-one\n    line-two\n  after: ok\n", "line-two", "  after: ok\n"),
    ('"{\\"password\\":\\"hunter2\\"}"', "hunter2", '\\"password\\":\\"'),
    ("bad --set 'db.password={hunter2': list must terminate", "hunter2", "bad --set 'db.password="),
    # a quoted expansion with a default: the default is a literal that may be the secret
    ('export PASSWORD="${DB_PASSWORD:-hunter2}"', "hunter2", "export PASSWORD="),
]


@pytest.mark.parametrize(("text", "secret", "kept"), SCRUBBED)
def test_secret_like_values_are_hashed_in_place(text: str, secret: str, kept: str) -> None:
    out = scrub(text)
    assert secret not in out and "<redacted:sha256:" in out
    assert kept in out
    assert scrub(out) == out  # scrubbing twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN CERTIFICATE-----\nMIIcert\n-----END CERTIFICATE-----",  # public by design
        "basic authentication is configured",
        "Bearer tokens are accepted",
        "PASS: report written to out.xml",
        'Error: secret "db-password" not found',
        "Secret/ns/db-password: created",
        "automountServiceAccountToken: true",
        "--validating-webhook-key=/usr/local/certificates/key",
        "--password=$(DB_PASSWORD)",
        # bitnami/charts bitnami/seaweedfs templates/_helpers.tpl, bitnami/solr statefulset.yaml:
        # the shell reads the password from a mounted file; hashing half of it broke the quoting
        'export DATABASE_PASSWORD="$(< "${DATABASE_PASSWORD_FILE}")"',
        'export SOLR_ADMIN_PASSWORD="$(< $SOLR_ADMIN_PASSWORD_FILE)"',
        'password: "${DB_PASSWORD}"',
        "ssh://git@github.com/org/repo",
        "https://example.com/path?x=1",
        "couldn't find key password in Secret default/db",
        "secretName: db-creds",
        "key: password",
        # bitnami/charts bitnami/memcached templates/_helpers.tpl: a chart's own fail text, keyed
        # by a username (who holds the password is no secret)
        'memcached: auth.username: Enabling authentication requires setting a valid admin username. '
        'Please set a valid username (--set auth.username="xxxx")',
        "basicAuth.user: admin",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert scrub(text) == text


def test_clip_scrubs_before_it_cuts() -> None:
    text = "x" * 50 + " Authorization: Bearer " + "t0k" * 40
    out = clip(text, 80)
    assert len(out) <= 80 and "t0kt0k" not in out


def test_pointers() -> None:
    assert is_pointer("/etc/secrets/token") and is_pointer("$(DB_PASSWORD)")
    assert not is_pointer("hunter2") and not is_pointer("/x")


# --- objects ------------------------------------------------------------------------------------


def test_secret_data_and_string_data_are_always_hashed() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "labels": {"token": "team-a"}},
        "data": {"k": "aHVudGVyMg==", "empty": ""},
        "stringData": {"config.yaml": "log: debug"},
    }
    before = copy.deepcopy(secret)
    out = redact_object(secret)
    assert secret == before  # the input is not modified
    assert out["data"] == {"k": secret_hash("aHVudGVyMg=="), "empty": ""}
    assert out["stringData"] == {"config.yaml": secret_hash("log: debug")}
    assert out["metadata"] == secret["metadata"]  # label keys are never judged


def test_a_secret_inside_a_list_is_a_secret() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}, "stringData": {"x": "hunter2"}},
            {"apiVersion": "v1", "kind": "SecretList", "items": [{"kind": "Secret", "data": {"y": "aHVudGVy"}}]},
        ],
    }
    text = json.dumps(redact_object(doc))
    assert "hunter2" not in text and "aHVudGVy" not in text


def test_last_applied_configuration_is_hashed_whole() -> None:
    applied = json.dumps({"kind": "Secret", "stringData": {"x": "hunter2"}})
    doc = {"kind": "ConfigMap", "metadata": {"name": "c", "annotations": {LAST_APPLIED: applied, "team": "a"}}}
    out = redact_object(doc)
    assert out["metadata"]["annotations"] == {LAST_APPLIED: secret_hash(applied), "team": "a"}


def test_keys_env_pairs_and_material_maps() -> None:
    pod: dict[str, Any] = {
        "kind": "Pod",
        "spec": {
            "automountServiceAccountToken": True,
            "imagePullSecrets": [{"name": "regcred"}],
            "containers": [
                {
                    "name": "app",
                    "args": ["--validating-webhook-key=/etc/certs/key", "--db-password=hunter2"],
                    "env": [
                        {"name": "DB_PASSWORD", "value": "hunter2"},
                        {"name": "MODE", "value": "fast"},
                        {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}},
                    ],
                }
            ],
        },
    }
    out = redact_object(pod)
    c = out["spec"]["containers"][0]
    assert c["env"][0]["value"] == secret_hash("hunter2") and c["env"][1]["value"] == "fast"
    assert c["env"][2]["valueFrom"] == {"secretKeyRef": {"name": "api", "key": "token"}}
    assert c["args"][0] == "--validating-webhook-key=/etc/certs/key"
    assert c["args"][1] == "--db-password=" + secret_hash("hunter2")
    assert out["spec"]["automountServiceAccountToken"] is True
    assert out["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    values = {
        "auth": {"enabled": True, "username": "app", "password": 1234, "existingSecret": "db"},
        "passwords": {"admin": "hunter2", "replication": "hunter3", "enabled": True},
        "tls": {"secretName": "tls-cert"},
        "DB-PASS": "hunter4",
        "pass_key": "hunter5",
    }
    red = redact_object(values)
    assert red["auth"] == {"enabled": True, "username": "app", "password": secret_hash(1234), "existingSecret": "db"}
    assert red["passwords"] == {"admin": secret_hash("hunter2"), "replication": secret_hash("hunter3"), "enabled": True}
    assert red["tls"] == {"secretName": "tls-cert"}
    assert "hunter4" not in str(red) and "hunter5" not in str(red)


def test_annotations_are_judged_by_name_unless_they_hold_a_digest() -> None:
    doc = {
        "kind": "Deployment",
        "metadata": {
            "annotations": {
                "vault.example.com/token": "s.hunter2",
                "checksum/secret": "0c937c0da108",
                "cert-manager.io/inject-ca-from-secret": "ns/ca",
                "secrets-store.example.io/used": "yes",
            }
        },
    }
    ann = redact_object(doc)["metadata"]["annotations"]
    assert ann["vault.example.com/token"] == secret_hash("s.hunter2")
    assert ann["checksum/secret"] == "0c937c0da108"
    assert ann["cert-manager.io/inject-ca-from-secret"] == "ns/ca"
    assert ann["secrets-store.example.io/used"] == "yes"


def test_a_crd_schema_is_not_a_secret() -> None:
    crd = {
        "kind": "CustomResourceDefinition",
        "spec": {"versions": [{"schema": {"openAPIV3Schema": {"properties": {"password": {
            "type": "string", "description": "The password of the user."}}}}}]},
    }
    assert redact_object(crd) == crd


# --- properties ---------------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(
        st.sampled_from(["password", "name", "value", "kind", "data", "token", "x", "labels"])
        | st.text(max_size=10),
        inner,
        max_size=4,
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=200))
def test_scrub_never_fails_and_is_idempotent(text: str) -> None:
    once = scrub(text)
    assert scrub(once) == once


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_json, st.sampled_from(["Secret", "List", "ConfigMap", None]))
def test_redact_object_never_fails_and_is_idempotent(doc: Any, kind: str | None) -> None:
    if isinstance(doc, dict) and kind:
        doc = {**doc, "kind": kind}
    once = redact_object(doc)
    assert redact_object(once) == once


def test_the_redaction_caches_answer_as_the_rules_do_and_stay_within_their_budget() -> None:
    # keys and texts are judged once and remembered while the remembered arguments fit a
    # budget of characters; past it the cache starts again and answers are unchanged
    from helmsim.redaction import _cached, is_secret_key, scrub

    calls: list[str] = []

    def judge(text: str) -> int:
        calls.append(text)
        return len(text)

    small = _cached(judge, budget=10)
    assert [small("abcd"), small("abcd"), small("efghij"), small("abcd")] == [4, 4, 6, 4]
    assert calls == ["abcd", "efghij"]  # 4 + 6 characters: both kept
    assert small("klm") == 3 and small("abcd") == 4  # 13 > 10: started again
    assert calls == ["abcd", "efghij", "klm", "abcd"]
    assert small("x" * 11) == 11 and small("x" * 11) == 11  # longer than the budget: never kept
    assert calls[-2:] == ["x" * 11, "x" * 11]

    padding = "x" * 5000
    long_text = f"{padding} password=hunter2 and token: abc123def"
    out = scrub(long_text)
    assert "hunter2" not in out and "abc123def" not in out and out.startswith(padding)
    assert scrub(long_text) == out == scrub(out)
    long_key = "a" * 300 + "Password"
    assert is_secret_key(long_key) and is_secret_key(long_key[-20:])
    assert not is_secret_key("a" * 300 + "SecretName")
