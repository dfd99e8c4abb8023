"""Secrets never leave the process: every text judgekit writes or prints goes through `redact`.

What counts as a secret: the value of any environment variable whose name says KEY, TOKEN,
SECRET or PASSWORD; the credentials of an endpoint URL (`user:password@`, and query values such
as `?api-key=`), remembered by `remember_url` when an endpoint is configured; and, by their
shape, `Authorization` values (`Bearer ...`, `Basic ...`) and `sk-` keys, which a provider may
echo back in an error body. An endpoint is shown in its public form (`public_url`: no user or
password, its query as a digest), and refused without showing its credentials
(`endpoint_problem`).

>>> remember_url("https://ana:hunter2pass@llm.example/v1?api-key=k3y-1234")
>>> redact("POST https://llm.example/v1?api-key=k3y-1234 as ana:hunter2pass failed")
'POST https://llm.example/v1?api-key=<redacted> as ana:<redacted> failed'
>>> redact("echo: Authorization: Bearer abc.def-123456")
'echo: Authorization: Bearer <redacted>'
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

# names of environment variables
SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
# names in a URL query that say a credential
SECRET_QUERY = re.compile(r"(key|token|secret|pass|auth|sig|credential)", re.IGNORECASE)
# names in a URL query whose values are never credentials; every other token-like value is one
HARMLESS_QUERY = frozenset({"api-version", "api_version", "version", "format", "alt"})
REDACTED = "<redacted>"
_MIN_LENGTH = 4  # shorter values are too likely to occur in ordinary text to be replaced everywhere

_remembered: set[str] = set()

_SHAPES = [
    # An Authorization header's value, whatever its scheme, and a bearer token anywhere.
    (
        re.compile(
            r"(authorization[\"']?\s*[:=]\s*[\"']?(?:Bearer|Basic|Token)?\s*)[^\s\"',;]+",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"\b(Bearer\s+)(?!<redacted>)[A-Za-z0-9._~+/=-]{6,}"), rf"\1{REDACTED}"),
    # A credential in a URL's query: ?api-key=..., &token=..., &sig=...
    (
        re.compile(
            r"([?&;][A-Za-z0-9_.-]*(?:key|token|secret|pass|auth|sig|credential)[A-Za-z0-9_.-]*=)(?!<redacted>)"
            r"[^&#\s'\"]+",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    # user:password@ in a URL.
    (re.compile(r"(://[^/@\s:]*:)[^/@\s]+@"), rf"\1{REDACTED}@"),
    # An OpenAI-style key: the prefix stays, to tell which key it was.
    (re.compile(r"\b(sk-[A-Za-z0-9_-]{4})[A-Za-z0-9_-]{8,}"), r"\1…"),
]


def remember(secret: str | None) -> None:
    """Treat this value as a secret from now on (in this process)."""
    if secret and len(secret) >= _MIN_LENGTH:
        _remembered.add(secret)


def remember_url(url: str | None) -> None:
    """Remember the credentials an endpoint URL carries: its user, password (and their basic-auth
    token) and every query value but those of HARMLESS_QUERY."""
    if not url:
        return
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:  # an unparseable URL: remember whatever looks like credentials in it
        username = password = None
        parts = None
    endpoint = parts is not None and parts.scheme in ("http", "https")
    # A user name alone (`http://TOKEN@host/v1`) is sent to an endpoint as basic auth: a
    # credential there (a database's user name is not).
    lone = endpoint and bool(username) and not password
    if password or lone:
        for value in (password, username if lone else None):
            if value:
                remember(unquote(value))
                remember(value)
        token = base64.b64encode(
            f"{unquote(username or '')}:{unquote(password or '')}".encode()
        ).decode()
        remember(token)
    if parts is not None:
        # An endpoint's query value, unless its name is known harmless: `?code=` (Azure
        # Functions), `pwd=`, `jwt=` are credentials whatever their names. A short plain word
        # (`stream=true`) is left: replaced everywhere it would blank ordinary text.
        for name, value in parse_qsl(parts.query, keep_blank_values=False):
            if SECRET_QUERY.search(name) or (
                endpoint and name.lower() not in HARMLESS_QUERY and _token_like(value)
            ):
                remember(value)


def _token_like(value: str) -> bool:
    """A value long and mixed enough to be a credential rather than a word or a number."""
    kinds = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    return len(value) >= 8 and kinds >= 2


def _environment_secrets() -> list[tuple[str, str]]:
    return [
        (name, value)
        for name, value in os.environ.items()
        if SECRET_ENV.search(name) and len(value) >= 8
    ]


def redact(text: str) -> str:
    """The text with every known secret, and everything shaped like a credential, replaced."""
    if not text:
        return text
    for name, value in _environment_secrets():
        if value in text:
            text = text.replace(value, f"<{name}>")
    # longest first: a token may hold a password
    for secret in sorted(_remembered, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _SHAPES:
        text = pattern.sub(replacement, text)
    return text


def redact_known(text: str) -> str:
    """Only the known secrets replaced (environment values and remembered credentials), for text
    that is not the provider's: example replies and reasons keep their words."""
    if not text:
        return text
    for name, value in _environment_secrets():
        if value in text:
            text = text.replace(value, f"<{name}>")
    for secret in sorted(_remembered, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_known_lines(lines: Iterable[str], size: int = 1 << 20) -> Iterator[str]:
    """`redact_known` over a text given as whole lines (each ending in a line break), in blocks of
    about `size` characters, so that a file of a million lines is never one string. A secret can
    straddle two blocks only if it holds a line break; then the text is redacted as one block."""
    whole = any("\n" in value for _, value in _environment_secrets()) or any(
        "\n" in s for s in _remembered
    )
    block: list[str] = []
    length = 0
    for line in lines:
        block.append(line)
        length += len(line)
        if length >= size and not whole:
            yield redact_known("".join(block))
            block, length = [], 0
    if block:
        yield redact_known("".join(block))


_QUERY_DIGEST = re.compile(r"<query:[0-9a-f]{12}>")


def public_url(url: str | None) -> str | None:
    """An endpoint without user:password, and its query (where keys sometimes ride) as a digest:
    a query is sent, and can pick the model that answers (a gateway's route, Azure's
    api-version), so two queries are two endpoints; the digest shows no value of it (12 hex
    digits of SHA-256: no way back to a key of a key's length, though a short guessable value
    could be found by trying).

    >>> public_url("https://ana:pw@llm.example:8443/v1")
    'https://llm.example:8443/v1'
    >>> public_url("https://llm.example/v1?api-key=k")
    'https://llm.example/v1?<query:8ce3361e490f>'
    >>> public_url(public_url("https://llm.example/v1?api-key=k"))
    'https://llm.example/v1?<query:8ce3361e490f>'
    """
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:  # a bad port is named by endpoint_problem; here it is only left out
        port = None
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{port}" if port else "")
    public = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    if not parts.query:
        return public
    if _QUERY_DIGEST.fullmatch(parts.query):  # a public form already: the same again
        return f"{public}?{parts.query}"
    return f"{public}?<query:{hashlib.sha256(parts.query.encode()).hexdigest()[:12]}>"


def endpoint_problem(url: str) -> str | None:
    """What makes an endpoint unusable (a scheme typo, no host, a bad port), in words that show no
    credential; None when it can be asked. Its credentials are remembered as secrets either way.

    >>> endpoint_problem("htp://ana:hunter2pass@llm.example/v1")
    "'htp://ana:<redacted>@llm.example/v1' does not start with http:// or https://; write it like https://host:8000/v1"
    """
    remember_url(url)
    shown = redact(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number in 0-65535)
    except ValueError as error:
        return f"{shown!r} is not a usable URL ({redact(str(error))}); write it like https://host:8000/v1"
    if parts.scheme not in ("http", "https"):
        return (
            f"{shown!r} does not start with http:// or https://; write it like https://host:8000/v1"
        )
    if not parts.hostname:
        return f"{shown!r} names no host; write it like https://host:8000/v1"
    if parts.port == 0:  # no server listens there: a client would ask port 80 or 443 instead
        return f"{shown!r} names port 0, which no server listens on; write it like https://host:8000/v1"
    return None
