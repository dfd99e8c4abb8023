"""What calls to a model cost, by litellm's own price table — read from the copy litellm ships
(LITELLM_LOCAL_MODEL_COST_MAP), never fetched — and litellm imported only when a price is asked for.
"""

from __future__ import annotations

from judgekit.llm.transports import import_litellm


def price(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """US dollars for so many tokens in and out of `model`; None (unknown, not zero) when litellm
    knows no price for it."""
    litellm = import_litellm()
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # litellm raises its own error types for a model it has no price for
        return None
    return float(prompt_cost) + float(completion_cost)
