"""Where the environment says a model is asked: the variables litellm and the openai SDK read an
endpoint from, per provider. Light (no transport, no event loop): the gate's fast path reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def endpoint_variables(model: str | None) -> tuple[str, ...]:
    """The environment variables the client reads an endpoint for `model` from: OPENAI_BASE_URL
    (the openai SDK's name) then OPENAI_API_BASE for an OpenAI-style model, else the provider's
    own (`anthropic/...`: ANTHROPIC_API_BASE, ANTHROPIC_BASE_URL), as litellm reads them.

    >>> endpoint_variables("anthropic/claude"), endpoint_variables("gpt-4o")
    (('ANTHROPIC_API_BASE', 'ANTHROPIC_BASE_URL'), ('OPENAI_BASE_URL', 'OPENAI_API_BASE'))
    """
    if model is None:
        return ()
    if model.startswith("openai/") or "/" not in model:
        return ("OPENAI_BASE_URL", "OPENAI_API_BASE")
    provider = model.split("/", 1)[0].upper().replace("-", "_").replace(".", "_")
    return (f"{provider}_API_BASE", f"{provider}_BASE_URL")


def environment_endpoint(
    model: str | None = "openai/", environ: Mapping[str, str] | None = None
) -> str | None:
    """The endpoint the environment names for `model` (the first of `endpoint_variables` set;
    by default an OpenAI-style model's)."""
    env = os.environ if environ is None else environ
    return next((env[v] for v in endpoint_variables(model) if env.get(v)), None)
