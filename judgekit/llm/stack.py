"""The standard stack a judge is asked through: Cached(Retrying(transport)) for a model string."""

from __future__ import annotations

from judgekit.llm.cache import CachedLLM
from judgekit.llm.protocol import LLM
from judgekit.llm.retry import RetryingLLM, RetryPolicy
from judgekit.llm.transports import LEAN_PREFIX, LiteLLM, OpenAICompatible


def open_llm(  # noqa: PLR0913  public, called by keyword from judging and improve: a change breaks them
    model: str,
    endpoint: str | None = None,
    cache_dir: str | None = None,
    timeout_s: float = 60.0,
    max_connections: int = 100,
    retry: RetryPolicy | None = None,
    via: str = "auto",
    max_age_s: float | None = None,
    not_before: float | None = None,
) -> LLM:
    """The standard stack for a model string: Cached(Retrying(transport)).

    With `via="auto"`, `openai/<model>` takes the lean OpenAI-compatible transport and everything
    else goes through litellm; `via="litellm"` sends everything through litellm.
    """
    transport: LLM
    if via not in ("auto", "litellm"):
        raise ValueError(f"via must be 'auto' or 'litellm', not {via!r}")
    if via == "auto" and model.startswith(LEAN_PREFIX):
        transport = OpenAICompatible(endpoint, timeout_s, max_connections)
    else:
        transport = LiteLLM(endpoint, timeout_s)
    llm: LLM = RetryingLLM(transport, model, endpoint, retry or RetryPolicy())
    if cache_dir is not None:
        llm = CachedLLM(llm, cache_dir, max_age_s, not_before)
    return llm
