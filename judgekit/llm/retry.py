"""Retries with exponential backoff and jitter, Retry-After honoured, and an early stop when the
provider is plainly down or the credentials are refused (instead of minutes of identical failures).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, replace

from judgekit.errors import ProviderAuthError, ProviderRejects, ProviderUnreachable
from judgekit.llm.protocol import LLM, RETRYABLE, CallError, Completion, Request
from judgekit.secrets import public_url


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. `down_after`: examples in a row lost to connection failures (with no
    success between them) before the provider is declared down. `unreadable`: times an answer
    that is neither a verdict nor a refusal is asked again, past the cache
    (judgekit.judging.answers)."""

    attempts: int = 6
    base_s: float = 0.5
    cap_s: float = 30.0
    max_retry_after_s: float = 120.0
    down_after: int = 4
    first_contact_attempts: int = 3
    unreadable: int = 1

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Equal jitter: half the exponential step fixed, half random, so clients spread out."""
        step = min(self.cap_s, self.base_s * 2.0 ** (attempt - 1))
        return step / 2 + rng.uniform(0, step / 2)


class RetryingLLM:
    """Retry retryable CallErrors; raise the last one when attempts run out.

    Raises ProviderAuthError at the first rejected credential, ProviderUnreachable when
    `down_after` examples in a row are lost to connection failures (before or after any
    success), and
    ProviderRejects when its first `down_after` answers all refuse the request as malformed
    (an unknown model, say) — instead of abstaining on every example and exiting 0.
    """

    def __init__(
        self,
        inner: LLM,
        model: str,
        endpoint: str | None = None,
        policy: RetryPolicy = RetryPolicy(),
        seed: int | None = None,
    ):
        self.inner, self.model, self.endpoint, self.policy = inner, model, endpoint, policy
        self._rng = random.Random(seed)
        self._paused_until = (
            0.0  # a 429's Retry-After pauses every caller, not only the one that got it
        )
        self._successes = 0
        self._lost_in_a_row = 0
        self._rejected = 0

    async def _wait_for_pause(self) -> None:
        delay = self._paused_until - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)

    async def complete(self, request: Request) -> Completion:
        policy = self.policy
        attempt = 0
        while True:
            attempt += 1
            await self._wait_for_pause()
            try:
                completion = await self.inner.complete(request)
            except CallError as error:
                if error.kind == "auth":
                    raise ProviderAuthError(self.model, error.message) from None
                limit = (
                    policy.attempts
                    if self._successes
                    else min(policy.attempts, policy.first_contact_attempts)
                )
                if error.kind not in RETRYABLE or attempt >= limit:
                    self._lost(error)
                    raise replace(error, attempts=attempt) from None
                delay = policy.backoff(attempt, self._rng)
                if error.retry_after is not None:
                    wait = min(error.retry_after, policy.max_retry_after_s)
                    delay = max(delay, wait)
                    self._paused_until = max(self._paused_until, time.monotonic() + wait)
                await asyncio.sleep(delay)
                continue
            self._successes += 1
            self._lost_in_a_row = 0
            return completion

    def _lost(self, error: CallError) -> None:
        if error.kind == "bad_request" and self._successes == 0:
            self._rejected += 1
            if self._rejected >= self.policy.down_after:
                raise ProviderRejects(self.model, error.message)
        if error.kind != "connection":
            self._lost_in_a_row = 0
            return
        self._lost_in_a_row += 1
        # Examples lost in a row, with no success between them: one lost example is a flaky
        # provider (at a 50% reset rate, 3 attempts all fail one time in 8), not a dead one.
        if self._lost_in_a_row >= self.policy.down_after:
            raise ProviderUnreachable(self.model, public_url(self.endpoint), error.message)

    def lookup(self, request: Request) -> Completion | None:
        return self.inner.lookup(request)

    def warm(self) -> None:
        self.inner.warm()

    async def aclose(self) -> None:
        await self.inner.aclose()
