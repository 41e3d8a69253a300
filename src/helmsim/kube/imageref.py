"""Container image references, parsed and normalised as the kubelet and the runtime do.

``parse("bitnami/postgresql:17")`` is ``docker.io/bitnami/postgresql:17``; ``parse("nginx")`` is
``docker.io/library/nginx`` with no tag (the runtime pulls ``latest``). A reference the kubelet
cannot parse raises :class:`ImageRefError` with the text of github.com/distribution/reference,
which the kubelet wraps (pkg/kubelet/images/image_manager.go applyDefaultImageTag).
"""

from __future__ import annotations

import re
from functools import lru_cache

from msgspec import Struct

# github.com/distribution/reference regexp.go: the grammar, ported term by term.
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_NAME = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*"
_IPV6 = r"\[(?:[a-fA-F0-9:]+)\]"
_HOST = rf"(?:{_DOMAIN_NAME}|{_IPV6})"
_DOMAIN_AND_PORT = rf"{_HOST}(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_REMOTE_NAME = rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_NAME = rf"(?:{_DOMAIN_AND_PORT}/)?{_REMOTE_NAME}"
_REFERENCE = re.compile(rf"({_NAME})(?::({_TAG}))?(?:@({_DIGEST}))?", re.ASCII)
_ANCHORED_NAME = re.compile(rf"(?:({_DOMAIN_AND_PORT})/)?({_REMOTE_NAME})", re.ASCII)
# anchored by fullmatch: Go's $ is the end of the text, Python's also before a final newline
_IDENTIFIER = re.compile(r"[a-f0-9]{64}")

NAME_TOTAL_LENGTH_MAX = 255
"""reference.go RepositoryNameTotalLengthMax: the longest repository path."""

DEFAULT_DOMAIN = "docker.io"
_LEGACY_DOMAIN = "index.docker.io"
_OFFICIAL_PREFIX = "library/"

# github.com/opencontainers/go-digest algorithm.go: the algorithms the kubelet links (crypto/sha256,
# crypto/sha512) and the length of their hex encoding.
_DIGEST_HEX_LENGTH = {"sha256": 64, "sha384": 96, "sha512": 128}
_DIGEST_ANCHORED = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+")


class ImageRefError(ValueError):
    """A reference distribution/reference refuses; ``str()`` is its error text."""


class ImageRef(Struct, frozen=True):
    """A parsed reference: ``domain`` (``docker.io``), ``path`` (``library/nginx``), and the
    ``tag`` and ``digest`` it names (either may be empty)."""

    domain: str
    path: str
    tag: str = ""
    digest: str = ""

    @property
    def name(self) -> str:
        """The repository: ``docker.io/library/nginx``."""
        return f"{self.domain}/{self.path}"

    @property
    def pulled(self) -> str:
        """What the runtime resolves: the tag ``latest`` when neither a tag nor a digest is given
        (k8s.io/kubernetes pkg/util/parsers ParseImageName), the digest when both are."""
        if self.digest:
            return f"{self.name}@{self.digest}"
        return f"{self.name}:{self.tag or 'latest'}"

    def __str__(self) -> str:
        out = self.name
        if self.tag:
            out += f":{self.tag}"
        if self.digest:
            out += f"@{self.digest}"
        return out


def _split_domain(name: str) -> tuple[str, str]:
    """normalize.go splitDockerDomain."""
    maybe_domain, sep, maybe_remote = name.partition("/")
    if not sep:
        return DEFAULT_DOMAIN, _OFFICIAL_PREFIX + name
    if maybe_domain == "localhost":
        domain, remote = maybe_domain, maybe_remote
    elif maybe_domain == _LEGACY_DOMAIN:
        domain, remote = DEFAULT_DOMAIN, maybe_remote
    elif "." in maybe_domain or ":" in maybe_domain or maybe_domain.lower() != maybe_domain:
        domain, remote = maybe_domain, maybe_remote
    else:
        domain, remote = DEFAULT_DOMAIN, name
    if domain == DEFAULT_DOMAIN and "/" not in remote:
        remote = _OFFICIAL_PREFIX + remote
    return domain, remote


def _check_digest(text: str, algorithms: frozenset[str]) -> None:
    """go-digest digest.go Validate, for the algorithms linked in (the kubelet links them all)."""
    algorithm, sep, encoded = text.partition(":")
    if not algorithm or not sep or not encoded:
        raise ImageRefError("invalid checksum digest format")
    size = _DIGEST_HEX_LENGTH.get(algorithm) if algorithm in algorithms else None
    if size is None:
        if not _DIGEST_ANCHORED.fullmatch(text):
            raise ImageRefError("invalid checksum digest format")
        raise ImageRefError("unsupported digest algorithm")
    if len(encoded) != size:
        raise ImageRefError("invalid checksum digest length")
    if not re.fullmatch(rf"[a-f0-9]{{{size}}}", encoded):
        raise ImageRefError("invalid checksum digest format")


KUBELET_ALGORITHMS = frozenset(_DIGEST_HEX_LENGTH)
"""The digest algorithms the kubelet accepts (it links crypto/sha256 and crypto/sha512)."""


@lru_cache(maxsize=8192)  # pure; asked for each container of each pod of each run
def parse(image: str, algorithms: frozenset[str] = KUBELET_ALGORITHMS) -> ImageRef:
    """normalize.go ParseNormalizedNamed: ``image`` as the kubelet reads it."""
    if _IDENTIFIER.fullmatch(image):
        raise ImageRefError(f"invalid repository name ({image}), cannot specify 64-byte hexadecimal strings")
    domain, remainder = _split_domain(image)
    remote = remainder.split(":", 1)[0]
    if remote.lower() != remote:
        raise ImageRefError(f"invalid reference format: repository name ({remote}) must be lowercase")
    return parse_reference(f"{domain}/{remainder}", algorithms)


def parse_reference(text: str, algorithms: frozenset[str] = KUBELET_ALGORITHMS) -> ImageRef:
    """reference.go Parse: ``text`` as written, not normalised (``domain`` empty when it has none)."""
    if not text:
        raise ImageRefError("repository name must have at least one component")
    matched = _REFERENCE.fullmatch(text)
    if matched is None:
        lowered = text.lower()
        if lowered != text and _REFERENCE.fullmatch(lowered):
            raise ImageRefError("repository name must be lowercase")
        raise ImageRefError("invalid reference format")
    name, tag, digest = matched.group(1), matched.group(2) or "", matched.group(3) or ""
    named = _ANCHORED_NAME.fullmatch(name)
    domain, path = (named.group(1) or "", named.group(2)) if named else ("", name)
    if len(path) > NAME_TOTAL_LENGTH_MAX:
        raise ImageRefError(f"repository name must not be more than {NAME_TOTAL_LENGTH_MAX} characters")
    if digest:
        _check_digest(digest, algorithms)
    return ImageRef(domain, path, tag, digest)


@lru_cache(maxsize=4096)
def normalise_pattern(ref: str) -> str:
    """An image pattern normalised as a name: ``bitnami/*`` → ``docker.io/bitnami/*``,
    ``nginx`` → ``docker.io/library/nginx`` (a glob in the first component stays as written)."""
    first, sep, rest = ref.partition("/")
    if not sep:
        # a glob alone (``*``) matches any name, ``/`` included; a bare name is an official image
        return ref if "*" in ref or "?" in ref else f"docker.io/library/{ref}"
    # distribution/reference normalize.go splitDockerDomain: the first component is a registry when
    # it has a dot or a colon, is "localhost" or has capitals; index.docker.io is docker.io.
    if first == "index.docker.io":
        first, ref = "docker.io", f"docker.io/{rest}"
    if first == "docker.io":
        return ref if "/" in rest or "*" in rest or "?" in rest else f"docker.io/library/{rest}"
    if "." in first or ":" in first or first == "localhost" or first.lower() != first or "*" in first or "?" in first:
        return ref
    return f"docker.io/{ref}"


def kubelet_error(image: str) -> str | None:
    """The kubelet's text when it cannot parse ``image`` (container state ``InvalidImageName``),
    None when it can (pkg/kubelet/images/image_manager.go EnsureImageExists, pkg/util/parsers
    ParseImageName)."""
    try:
        parse(image)
    except ImageRefError as err:
        q = go_quote(image)
        return f"Failed to apply default image tag {q}: couldn't parse image name {q}: {err}"
    return None


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string (strconv.Quote): the escapes Go writes, other control and
    non-printable characters as ``\\xNN`` (ASCII) or ``\\uNNNN``."""
    out = ['"']
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


__all__ = ["DEFAULT_DOMAIN", "KUBELET_ALGORITHMS", "ImageRef", "ImageRefError", "kubelet_error", "go_quote", "normalise_pattern", "parse", "parse_reference"]
