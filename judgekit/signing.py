"""Authenticated evidence: an HMAC-SHA256 tag, with a key the environment gives
(JUDGEKIT_EVIDENCE_KEY, set from a CI secret), over each cache entry and each report pair, so
that an answer or a report nobody holding the key wrote is not evidence.

Without a key nothing is signed and nothing can be checked: the cache and the report folder are
then trusted as they are (docs/reference/report-and-gate.md, RELIABILITY.md).

>>> tag(b"k", "a", "bc") != tag(b"k", "ab", "c")  # the parts are length-prefixed
True
>>> genuine(b"k", tag(b"k", "x"), "x"), genuine(b"other", tag(b"k", "x"), "x")
(True, False)
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping

KEY_VARIABLE = "JUDGEKIT_EVIDENCE_KEY"
PREFIX = "hmac-sha256:"
# The criterion and judge of a finding that stands for all of them: under a key, a history whose
# findings' seal does not verify (judgekit.watch.seal) is read as every judge found changed now.
UNSEALED = "*"


def evidence_key(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The key evidence is signed and checked with, or None when none is configured."""
    value = (os.environ if environ is None else environ).get(KEY_VARIABLE)
    return value.encode("utf-8") if value else None


def tag(key: bytes, *parts: str) -> str:
    """The tag of `parts` under `key` (each part length-prefixed, so no two lists share one)."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        data = part.encode("utf-8")
        mac.update(len(data).to_bytes(8, "big"))
        mac.update(data)
    return PREFIX + mac.hexdigest()


def genuine(key: bytes, given: object, *parts: str) -> bool:
    """Whether `given` is the tag of `parts` under `key` (compared in constant time)."""
    return isinstance(given, str) and hmac.compare_digest(given, tag(key, *parts))
