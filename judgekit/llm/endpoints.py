"""Where the environment says a model is asked: the variables litellm and the openai SDK read an
endpoint from, per provider. Light (no transport, no event loop): the gate's fast path reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# Providers whose endpoint variables litellm does not name `<PROVIDER>_API_BASE` or
# `<PROVIDER>_BASE_URL` alone: all it reads, in its order (its first set one is the endpoint).
# tests/test_endpoints.py reads the installed litellm's source for every such name, so a litellm
# that reads a new one fails the suite until it is here.
IRREGULAR: dict[str, tuple[str, ...]] = {
    "ai21_chat": ("AI21_API_BASE",),
    "bedrock": ("AWS_BEDROCK_RUNTIME_ENDPOINT",),
    "cohere_chat": ("COHERE_API_BASE",),
    "featherless_ai": ("FEATHERLESS_AI_API_BASE", "FEATHERLESS_API_BASE"),
    "fireworks_ai": ("FIREWORKS_API_BASE",),
    "friendliai": ("FRIENDLI_API_BASE",),
    "huggingface": ("HF_API_BASE", "HUGGINGFACE_API_BASE"),
    "lambda_ai": ("LAMBDA_API_BASE",),
    "meta_llama": ("LLAMA_API_BASE",),
    "ollama_chat": ("OLLAMA_API_BASE",),
    "vertex_ai": ("VERTEXAI_API_BASE", "VERTEX_API_BASE"),
    "volcengine": ("VOLCENGINE_API_BASE", "ARK_API_BASE"),
    "watsonx": ("WATSONX_API_BASE", "WATSONX_URL", "WX_URL", "WML_URL"),
    "watsonx_text": ("WATSONX_API_BASE", "WATSONX_URL", "WX_URL", "WML_URL"),
}


def endpoint_variables(model: str | None) -> tuple[str, ...]:
    """The environment variables the client reads an endpoint for `model` from: OPENAI_BASE_URL
    (the openai SDK's name) then OPENAI_API_BASE for an OpenAI-style model, else the provider's
    own as litellm reads them (`anthropic/...`: ANTHROPIC_API_BASE, ANTHROPIC_BASE_URL;
    `friendliai/...`: FRIENDLI_API_BASE).

    >>> endpoint_variables("anthropic/claude"), endpoint_variables("gpt-4o")
    (('ANTHROPIC_API_BASE', 'ANTHROPIC_BASE_URL'), ('OPENAI_BASE_URL', 'OPENAI_API_BASE'))
    """
    if model is None:
        return ()
    if model.startswith("openai/") or "/" not in model:
        return ("OPENAI_BASE_URL", "OPENAI_API_BASE")
    prefix = model.split("/", 1)[0]
    if prefix.lower() in IRREGULAR:
        return IRREGULAR[prefix.lower()]
    provider = prefix.upper().replace("-", "_").replace(".", "_")
    return (f"{provider}_API_BASE", f"{provider}_BASE_URL")


def environment_endpoint(
    model: str | None = "openai/", environ: Mapping[str, str] | None = None
) -> str | None:
    """The endpoint the environment names for `model` (the first of `endpoint_variables` set;
    by default an OpenAI-style model's)."""
    env = os.environ if environ is None else environ
    return next((env[v] for v in endpoint_variables(model) if env.get(v)), None)
