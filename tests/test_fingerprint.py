"""Fingerprints name content: the hash must stay what it was, or every cache
and report hash changes."""

import hashlib
import json
from datetime import UTC, datetime

import pytest

from judgekit.fingerprint import canonical_hash, canonical_hash_of_list
from judgekit.llm.cache import cache_key
from judgekit.llm.protocol import Request


def by_definition(data):
    """canonical_hash as first written: json.dumps, sorted keys, no spaces, UTF-8."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    "data",
    [
        {"b": 1, "a": [1, 2.5, None, True]},
        "text",
        None,
        3,
        [],
        {"é": "ünïcode ✓ \u2028", "z": {"y": {"x": []}}},
        {"when": datetime(2026, 1, 2, tzinfo=UTC)},  # default=str
        {"input": "q", "output": "r", "context": None},  # an example's key
    ],
)
def test_the_hash_is_the_one_of_its_definition(data):
    assert canonical_hash(data) == by_definition(data)


def test_a_cache_key_is_unchanged():
    request = Request(
        model="openai/m",
        messages=[{"role": "user", "content": "Is it blocked? é"}],
        temperature=0.0,
        max_tokens=64,
        response_format={"type": "json_object"},
        trial=1,
        endpoint="http://h/v1",
    )
    assert cache_key(request) == by_definition(request.key_data())


@pytest.mark.parametrize(
    "items",
    [[], [None], [{"b": 1, "a": "é"}, [1, 2], "x", 2.5], [{"id": str(i)} for i in range(50)]],
)
def test_a_list_hashed_item_by_item_is_the_list_hashed_whole(items):
    assert canonical_hash_of_list(iter(items)) == canonical_hash(items) == by_definition(items)
