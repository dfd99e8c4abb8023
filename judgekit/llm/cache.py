"""An on-disk cache of successful judge answers (diskcache: SQLite, safe across processes).

The key is the sha256 of canonical JSON of the request (model, messages, sampling parameters,
response format, trial, endpoint, cache format version); the value is plain JSON text, with the
time the answer was obtained, so a report can say how old its evidence is. Failures are never
stored, so a re-run retries exactly what did not finish. An answer without a time (cached by an
older judgekit), or older than the cache's `max_age_s`, is asked again. A re-ask (a request with
`keep_if`, judgekit.judging.answers) is never served from the cache, and its answer replaces the
cached one only when `keep_if` accepts it. With an evidence key (JUDGEKIT_EVIDENCE_KEY), each
entry carries an HMAC-SHA256 tag over its key and its content, and one whose tag is not genuine is
a miss (judgekit.signing).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from judgekit.errors import InputError
from judgekit.fingerprint import canonical_hash, canonical_json
from judgekit.llm.protocol import LLM, Completion, Request
from judgekit.secrets import redact_known
from judgekit.signing import evidence_key, genuine, tag


def cache_key(request: Request) -> str:
    return canonical_hash(request.key_data())


class CachedLLM:
    """Serve answers from the cache; ask `inner` and store the answer otherwise.

    >>> import asyncio, tempfile
    >>> from judgekit.testing import FakeLLM
    >>> fake = FakeLLM(lambda r: "PASS")
    >>> llm = CachedLLM(fake, tempfile.mkdtemp())
    >>> r = Request(model="m", messages=[{"role": "user", "content": "x"}])
    >>> [asyncio.run(llm.complete(r)).cached for _ in range(2)], fake.calls
    ([False, True], 1)
    """

    def __init__(
        self,
        inner: LLM,
        directory: str | Path,
        max_age_s: float | None = None,
        not_before: float | None = None,
    ):
        import sqlite3

        import diskcache

        self.inner = inner
        self.directory = Path(directory)
        self.max_age_s = max_age_s
        # Answers obtained before this time (a drift found, a lapse: POSIX seconds) are asked
        # again: an absolute time, so an answer obtained just after it is never one of them.
        self.not_before = not_before
        # With an evidence key, an entry is signed when stored and served only when its tag is
        # genuine (judgekit.signing): one written by anyone else is a miss.
        self.key = evidence_key()
        try:
            self._cache = diskcache.Cache(
                str(self.directory), size_limit=2**34, eviction_policy="none"
            )
        except (OSError, sqlite3.Error) as error:
            raise InputError.one(
                self.directory,
                "",
                f"cannot be used as the answer cache ({error}); pass "
                "--cache-dir with a writable folder, or --no-cache",
            ) from None

    def lookup(self, request: Request) -> Completion | None:
        key = cache_key(request)
        value = self._cache.get(key)
        if not isinstance(value, str):  # only JSON text is ever written; anything else is not ours
            return None
        try:
            data = json.loads(value)
            signature = data.pop("sig", None) if isinstance(data, dict) else None
            completion = Completion(**data, cached=True)
        except (ValueError, TypeError):
            return None
        if self.key is not None and not genuine(self.key, signature, key, canonical_json(data)):
            return None  # not written by a holder of the evidence key: asked again
        if not isinstance(data.get("obtained_at"), (int, float)):
            return None  # no time: the age of this evidence is unknown
        if self.max_age_s is not None and time.time() - completion.obtained_at > self.max_age_s:
            return None  # too old for the gate's max_age: ask again
        if self.not_before is not None and completion.obtained_at < self.not_before:
            return None  # from before a recheck found its judge changed: ask again
        return completion

    async def complete(self, request: Request) -> Completion:
        if request.keep_if is None:
            hit = self.lookup(request)  # again: another process may have answered it meanwhile
            if hit is not None:
                return hit
        completion = await self.inner.complete(request)
        if request.keep_if is None or request.keep_if(completion):
            key = cache_key(request)
            # redacted first: the tag is over what is stored
            data = json.loads(redact_known(json.dumps(completion.to_json(), ensure_ascii=False)))
            if self.key is not None:
                data["sig"] = tag(self.key, key, canonical_json(data))
            self._cache.set(key, json.dumps(data, ensure_ascii=False))
        return replace(completion, cached=False)

    def warm(self) -> None:
        self.inner.warm()

    async def aclose(self) -> None:
        await self.inner.aclose()
        self._cache.close()
