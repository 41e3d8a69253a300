"""Derive cases.yaml from github.com/distribution/reference's own test tables.

Reads ``reference_test.go`` (TestReferenceParse) and ``normalize_test.go``
(TestValidateReferenceName, TestValidateRemoteName, TestParseRepositoryInfo) of a checkout and
writes each case as data: the input, and the error text or the parts expected. Go's
``strings.Repeat`` and ``+`` in the inputs are evaluated.

Run: python tests/unit/data/image_references/generate.py /path/to/distribution/reference
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ERRORS = {
    "ErrNameEmpty": "repository name must have at least one component",
    "ErrReferenceInvalidFormat": "invalid reference format",
    "ErrNameContainsUppercase": "repository name must be lowercase",
    "ErrNameTooLong": "repository name must not be more than 255 characters",
    "digest.ErrDigestInvalidLength": "invalid checksum digest length",
    "digest.ErrDigestUnsupported": "unsupported digest algorithm",
    "digest.ErrDigestInvalidFormat": "invalid checksum digest format",
}
_STRING = r'"(?:[^"\\]|\\.)*"|strings\.Repeat\("(?:[^"\\]|\\.)*",\s*\d+\)'


def go_value(expr: str) -> str:
    """A Go string expression of string literals, ``strings.Repeat`` calls and ``+``."""
    out = ""
    for part in re.findall(_STRING, expr):
        if part.startswith("strings.Repeat"):
            m = re.match(r'strings\.Repeat\("((?:[^"\\]|\\.)*)",\s*(\d+)\)', part)
            assert m
            out += m.group(1) * int(m.group(2))
        else:
            out += part[1:-1].encode().decode("unicode_escape")
    return out


def _body(source: str, test: str) -> str:
    start = source.index(f"func {test}(")
    return source[start : source.index("\n}\n", start)]


def reference_parse(source: str) -> list[dict[str, str]]:
    body = _body(source, "TestReferenceParse")
    cases = []
    for block in re.findall(r"\n\t\t\{\n(.*?)\n\t\t\},", body, re.S):
        if all(line.strip().startswith("//") for line in block.splitlines() if line.strip()):
            continue
        case: dict[str, str] = {}
        for key, expr in re.findall(r"^\s*(\w+):\s*(.*?),?\s*$", block, re.M):
            case[key] = ERRORS[expr] if key == "err" else go_value(expr)
        cases.append(case)
    return cases


def string_list(body: str, name: str) -> list[str]:
    block = re.search(rf"{name} := \[\]string\{{(.*?)\n\t\}}", body, re.S)
    assert block, name
    return [go_value(m) for m in re.findall(r'^\s*("(?:[^"\\]|\\.)*")', block.group(1), re.M)]


def repository_info(source: str) -> list[dict[str, str]]:
    body = _body(source, "TestParseRepositoryInfo")
    out = []
    for block in re.findall(r"\n\t\t\{\n(.*?)\n\t\t\},", body, re.S):
        out.append({k: go_value(v) for k, v in re.findall(r"^\s*(\w+):\s*(.*?),\s*$", block, re.M)})
    return out


def main(repo: Path) -> None:
    def show(path: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], check=True, capture_output=True, text=True).stdout

    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    ref, norm = show("reference_test.go"), show("normalize_test.go")
    names = _body(norm, "TestValidateReferenceName")
    remotes = _body(norm, "TestValidateRemoteName")
    data = {
        "source": f"github.com/distribution/reference@{commit} (reference_test.go, normalize_test.go)",
        "parse": reference_parse(ref),
        "normalized_valid": string_list(names, "validRepoNames") + string_list(remotes, "validRepositoryNames"),
        "normalized_invalid": string_list(names, "invalidRepoNames") + string_list(remotes, "invalidRepositoryNames"),
        "repository_info": repository_info(norm),
    }
    out = Path(__file__).with_name("cases.yaml")
    header = "# Derived by generate.py from github.com/distribution/reference's test tables; do not edit.\n"
    out.write_text(header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=200))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
