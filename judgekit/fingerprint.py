"""Fingerprints: the one way judgekit names the content of anything — a judge, a set, a cache key,
a file as it was read.

>>> canonical_hash({"b": 1, "a": [1, 2]}) == canonical_hash({"a": [1, 2], "b": 1})
True
>>> digest(b"id: c\\n")[:12]
'5fba1ffbdbb8'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

# What json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
# writes, with one encoder made once: json.dumps makes a new one per call, a third of the cost of
# hashing a cache key (one per example and trial).
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)


def canonical_json(data: Any) -> str:
    """Canonical JSON text (keys sorted, no spaces, UTF-8 as is): what every hash and tag of
    judgekit's is taken over.

    >>> canonical_json({"b": 1, "a": "é"})
    '{"a":"é","b":1}'
    """
    return _CANONICAL.encode(data)


def canonical_hash(data: Any) -> str:
    """sha256 of canonical JSON (keys sorted, no spaces, UTF-8): equal data, equal hash."""
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


def canonical_hash_of_list(items: Iterable[Any]) -> str:
    """`canonical_hash(list(items))`, hashed item by item: the list and its JSON text (a set's
    million examples: hundreds of megabytes) are never held whole.

    >>> canonical_hash_of_list(iter([{"b": 1}, "x"])) == canonical_hash([{"b": 1}, "x"])
    True
    """
    hashed = hashlib.sha256(b"[")
    separator = b""
    for item in items:
        hashed.update(separator)
        hashed.update(_CANONICAL.encode(item).encode("utf-8"))
        separator = b","
    hashed.update(b"]")
    return hashed.hexdigest()


def digest(data: bytes) -> str:
    """sha256 of a file's bytes, as read."""
    return hashlib.sha256(data).hexdigest()
