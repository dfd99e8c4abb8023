"""The LLM adapter: one small protocol, and the layers that wrap it.

    judge ──> Cached(Retrying(transport))      transport = OpenAICompatible | LiteLLM | FakeLLM

Everything that talks to a model goes through `LLM.complete`. Caching and retries are layers
around a transport, not flags threaded through the code. This package is the only place that
imports litellm and diskcache, and it imports them only when a model is actually called.

>>> import asyncio
>>> from judgekit.testing import FakeLLM
>>> llm = FakeLLM(lambda request: '{"reasoning": "ok", "passed": true}')
>>> asyncio.run(llm.complete(Request(model="fake", messages=[{"role": "user", "content": "hi"}]))).text
'{"reasoning": "ok", "passed": true}'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from judgekit.llm.retry import RetryPolicy

# Everything that changes a judge's answer goes into Request and so into its cache key;
# timeouts and retry counts do not change answers and live elsewhere.
CACHE_FORMAT = 1

ErrorKind = Literal["rate_limit", "server", "timeout", "connection", "dropped", "auth", "bad_request", "other"]
RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection", "dropped"})


@dataclass(frozen=True)
class Request:
    """One judge call: exactly the things that change the answer."""

    model: str
    messages: list[dict[str, str]]
    temperature: float = 0.0
    max_tokens: int = 512
    response_format: dict[str, Any] | None = None
    trial: int = 0
    api_base: str | None = None

    def key_data(self) -> dict[str, Any]:
        return {"v": CACHE_FORMAT, "model": self.model, "messages": self.messages, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "response_format": self.response_format, "trial": self.trial,
                "api_base": self.api_base}


@dataclass(frozen=True)
class Completion:
    """A model's answer, with what it cost and when the provider gave it (`obtained_at`, seconds
    since the epoch: a cached answer keeps the time it was first obtained)."""

    text: str
    finish_reason: str | None = None
    refusal: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    latency_s: float = 0.0
    cached: bool = False
    obtained_at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "finish_reason": self.finish_reason, "refusal": self.refusal,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "cost": self.cost,
                "obtained_at": self.obtained_at}


@dataclass
class CallError(Exception):
    """A call that did not return an answer, classified so the retry layer knows what to do."""

    kind: ErrorKind
    message: str
    retry_after: float | None = None
    status: int | None = None
    attempts: int = field(default=1, compare=False)

    def __str__(self) -> str:
        status = f" {self.status}" if self.status else ""
        return f"{self.kind}{status}: {self.message}"


class LLM(Protocol):
    """Anything that answers a Request. Raise CallError for a failed call.

    `lookup` answers from a cache without any I/O beyond the disk (None when there is no answer
    or no cache); `warm` makes ready to call (imports, clients) before the first request.
    """

    async def complete(self, request: Request) -> Completion: ...

    def lookup(self, request: Request) -> Completion | None: ...

    def warm(self) -> None: ...

    async def aclose(self) -> None: ...


def open_llm(model: str, api_base: str | None = None, cache_dir: str | None = None, timeout_s: float = 60.0,
             max_connections: int = 100, retry: "RetryPolicy | None" = None, via: str = "auto",
             max_age_s: float | None = None) -> LLM:
    """The standard stack for a model string: Cached(Retrying(transport)).

    With `via="auto"`, `openai/<model>` takes the lean OpenAI-compatible transport and everything
    else goes through litellm; `via="litellm"` sends everything through litellm.
    """
    from judgekit.llm.retry import RetryingLLM, RetryPolicy
    from judgekit.llm.transports import LEAN_PREFIX, LiteLLM, OpenAICompatible

    transport: LLM
    if via not in ("auto", "litellm"):
        raise ValueError(f"via must be 'auto' or 'litellm', not {via!r}")
    if via == "auto" and model.startswith(LEAN_PREFIX):
        transport = OpenAICompatible(api_base, timeout_s, max_connections)
    else:
        transport = LiteLLM(api_base, timeout_s)
    llm: LLM = RetryingLLM(transport, model, api_base, retry or RetryPolicy())
    if cache_dir is not None:
        from judgekit.llm.cache import CachedLLM

        llm = CachedLLM(llm, cache_dir, max_age_s)
    return llm
