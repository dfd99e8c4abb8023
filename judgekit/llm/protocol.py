"""The protocol every model is spoken to through: a Request (exactly what changes the answer), a
Completion (the answer, what it cost, when it was given), a CallError (a call that failed,
classified for the retry layer), and LLM (anything that answers a Request).

>>> Request(model="m", messages=[{"role": "user", "content": "hi"}]).key_data()["v"]
1
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from judgekit.llm.weights import weights

# Everything that changes a judge's answer goes into Request and so into its cache key;
# timeouts and retry counts do not change answers and live elsewhere.
CACHE_FORMAT = 1

ErrorKind = Literal[
    "rate_limit", "server", "timeout", "connection", "dropped", "auth", "bad_request", "other"
]
RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection", "dropped"})


@dataclass(frozen=True)
class Request:
    """One judge call: exactly the things that change the answer (and, on a re-ask, `keep_if`)."""

    model: str
    messages: list[dict[str, str]]
    temperature: float = 0.0
    max_tokens: int = 512
    response_format: dict[str, Any] | None = None
    trial: int = 0
    endpoint: str | None = None  # where it is asked (its public form is the judge's)
    via: str = "auto"  # the transport asked through (judgekit.llm.stack.open_llm)
    logprobs: bool = False  # ask for the answer tokens' log-probabilities (a verdict's confidence)
    # Set on a re-ask of an unreadable answer: the cache is not read, and the new answer replaces
    # the cached one only when keep_if accepts it. It never changes the key: it is the same
    # question.
    keep_if: Callable[[Completion], bool] | None = field(default=None, compare=False, repr=False)

    def key_data(self) -> dict[str, Any]:
        data = {
            "v": CACHE_FORMAT,
            "model": self.model,
            "messages": self.messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_format": self.response_format,
            "trial": self.trial,
            "api_base": self.endpoint,  # the key's name for it since the cache's first format
        }
        # Only when asked (or not the default transport): the answers cached before
        # log-probabilities existed, or through the default transport, keep their keys.
        if self.via != "auto":
            data["via"] = self.via
        if (found := weights(self.model)) is not None:  # a local model: which weights answered
            data["weights"] = found
        return {**data, "logprobs": True} if self.logprobs else data


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
    # Each answer token and its log-probability, when the request asked for them and the provider
    # gave them.
    logprobs: list[tuple[str, float]] | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "refusal": self.refusal,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
            "obtained_at": self.obtained_at,
        }
        return (
            {**data, "logprobs": [list(t) for t in self.logprobs]}
            if self.logprobs is not None
            else data
        )


# an exception is hashable (runners collect them in sets); equal only to itself
@dataclass(eq=False)
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
