"""The LLM adapter: one small protocol, and the layers that wrap it.

    judge ──> Cached(Retrying(transport))      transport = OpenAICompatible | LiteLLM | FakeLLM

Everything that talks to a model goes through `LLM.complete`. Caching and retries are layers
around a transport, not flags threaded through the code. This package is the only place that
imports litellm and diskcache, and it imports them only when a model is actually called.

>>> import asyncio
>>> from judgekit.llm.protocol import Request
>>> from judgekit.testing import FakeLLM
>>> llm = FakeLLM(lambda request: '{"reasoning": "ok", "passed": true}')
>>> request = Request(model="fake", messages=[{"role": "user", "content": "hi"}])
>>> asyncio.run(llm.complete(request)).text
'{"reasoning": "ok", "passed": true}'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgekit.lazy import exports

if TYPE_CHECKING:  # what a type checker sees: the real names, so each keeps its signature
    from judgekit.llm.cache import CachedLLM as CachedLLM
    from judgekit.llm.protocol import (
        CACHE_FORMAT as CACHE_FORMAT,
        LLM as LLM,
        RETRYABLE as RETRYABLE,
        CallError as CallError,
        Completion as Completion,
        ErrorKind as ErrorKind,
        Request as Request,
    )
    from judgekit.llm.retry import RetryingLLM as RetryingLLM, RetryPolicy as RetryPolicy
    from judgekit.llm.stack import open_llm as open_llm
    from judgekit.llm.transports import (
        LEAN_PREFIX as LEAN_PREFIX,
        LiteLLM as LiteLLM,
        OpenAICompatible as OpenAICompatible,
    )

_NAMES = {
    "CACHE_FORMAT": "judgekit.llm.protocol",
    "CachedLLM": "judgekit.llm.cache",
    "CallError": "judgekit.llm.protocol",
    "Completion": "judgekit.llm.protocol",
    "ErrorKind": "judgekit.llm.protocol",
    "LEAN_PREFIX": "judgekit.llm.transports",
    "LLM": "judgekit.llm.protocol",
    "LiteLLM": "judgekit.llm.transports",
    "OpenAICompatible": "judgekit.llm.transports",
    "RETRYABLE": "judgekit.llm.protocol",
    "Request": "judgekit.llm.protocol",
    "RetryPolicy": "judgekit.llm.retry",
    "RetryingLLM": "judgekit.llm.retry",
    "open_llm": "judgekit.llm.stack",
}
__all__ = sorted(_NAMES)
if not TYPE_CHECKING:  # at run time each name loads on first use: the package itself is light
    __getattr__, __dir__ = exports(__name__, _NAMES)
