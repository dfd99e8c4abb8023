"""Transports: the code that actually sends a Request to a model.

- `OpenAICompatible`: a lean path for `openai/<model>` (OpenAI or any OpenAI-compatible server at
  `--api-base`): one shared HTTP connection pool and plain JSON, which costs the client a small
  fraction of the CPU a litellm call does (see benchmarks/README.md).
- `LiteLLM`: every other provider, through `litellm.acompletion`, imported on first use.

Keys are read from the environment when a transport is made, sent in headers, and never stored.
"""

from __future__ import annotations

import email.utils
import json
import os
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from judgekit.errors import InputError
from judgekit.llm import local
from judgekit.llm.endpoints import environment_endpoint
from judgekit.llm.protocol import CallError, Completion, ErrorKind, Request
from judgekit.secrets import endpoint_problem, redact, remember_url

if TYPE_CHECKING:  # aiohttp is imported on the first call, not with the module
    import aiohttp

LEAN_PREFIX = "openai/"


def check_endpoint(url: str | None, where: str = "--api-base") -> None:
    """Refuse an endpoint that cannot be asked (a scheme typo, no host, a bad port) before any
    call, with a message that shows no credential (judgekit.secrets.endpoint_problem); remember its
    credentials as secrets."""
    problem = endpoint_problem(url) if url is not None else None
    if problem is not None:
        raise InputError.one(where, "", problem)


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_for_status(status: int, body: str, headers: Any = None) -> CallError:
    message = redact(body.strip()[:300]) or f"HTTP {status}"
    if status == 429:
        return CallError(
            "rate_limit",
            message,
            retry_after(headers.get("retry-after") if headers else None),
            status,
        )
    if status in (401, 403):
        return CallError("auth", message, status=status)
    if status >= 500 or status == 408:
        return CallError("server", message, status=status)
    return CallError("bad_request", message, status=status)


def completion_from_json(data: Any, latency: float) -> Completion:
    """Read an OpenAI-style chat completion body; a body of the wrong shape is a server error."""
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
        usage = data.get("usage") or {}
        return Completion(
            text=message.get("content") or "",
            finish_reason=choice.get("finish_reason"),
            refusal=message.get("refusal"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_s=latency,
            logprobs=token_logprobs(choice.get("logprobs")),
        )
    except (KeyError, IndexError, TypeError, AttributeError, ValueError):
        raise CallError(
            "server", f"response is not a chat completion: {redact(str(data)[:200])}"
        ) from None


def token_logprobs(given: Any) -> list[tuple[str, float]] | None:
    """The (token, log-probability) pairs of an OpenAI-style `logprobs` block; None when absent or
    not of that shape (a provider that ignores the request gives none: the verdict has no such
    confidence).

    >>> token_logprobs({"content": [{"token": "true", "logprob": -0.1}]})
    [('true', -0.1)]
    """
    content = given.get("content") if isinstance(given, dict) else None
    if not isinstance(content, list) or not content:
        return None
    out = []
    for item in content:
        token, logprob = (
            (item.get("token"), item.get("logprob")) if isinstance(item, dict) else (None, None)
        )
        if (
            not isinstance(token, str)
            or isinstance(logprob, bool)
            or not isinstance(logprob, (int, float))
        ):
            return None
        out.append((token, float(logprob)))
    return out


class OpenAICompatible:
    """POST /chat/completions over one pooled aiohttp session, created in the running event loop.

    aiohttp rather than httpx: httpcore's pool scans every connection for every queued request,
    which made the client burn ~15 ms of CPU per call at 64 in flight (benchmarks/README.md).
    """

    def __init__(
        self, endpoint: str | None = None, timeout_s: float = 60.0, max_connections: int = 100
    ):
        base = endpoint or environment_endpoint()
        remember_url(base)
        parts = urlsplit((base or "https://api.openai.com/v1").rstrip("/"))
        # Credentials in the URL are sent as basic auth and kept out of every message we print.
        self._basic = (
            (parts.username or "", parts.password or "")
            if parts.username or parts.password
            else None
        )
        netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
        # what messages may show
        self.base_url = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        # The path gets /chat/completions; a query (Azure's api-version, say) stays after it.
        self._endpoint = urlunsplit(
            (parts.scheme, netloc, parts.path.rstrip("/") + "/chat/completions", parts.query, "")
        )
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        key = os.environ.get("OPENAI_API_KEY")
        if self._basic:
            import base64

            token = base64.b64encode(":".join(self._basic).encode()).decode()
            auth = {"authorization": f"Basic {token}"}
        else:
            auth = {"authorization": f"Bearer {key}"} if key else {}
        self._headers = {"content-type": "application/json", **auth}
        self._session: aiohttp.ClientSession | None = None
        self._schema_supported = True

    def lookup(self, request: Request) -> Completion | None:
        return None

    def warm(self) -> None:
        import aiohttp  # noqa: F401  (before the first call, so the import is not paid inside it)

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_connections, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                headers=self._headers,
            )
        return self._session

    async def complete(self, request: Request) -> Completion:
        import aiohttp

        body: dict[str, Any] = {
            "model": request.model.removeprefix(LEAN_PREFIX),
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.response_format and self._schema_supported:
            body["response_format"] = request.response_format
        if request.logprobs:
            body["logprobs"] = True
        started = time.perf_counter()
        try:
            async with self._http().post(self._endpoint, data=json.dumps(body)) as response:
                status, text, headers = response.status, await response.text(), response.headers
        except TimeoutError:
            raise CallError("timeout", f"no answer within {self.timeout_s:g} s") from None
        except aiohttp.ClientConnectorError as error:
            raise CallError(
                "connection", f"cannot connect to {self.base_url} ({error.os_error})"
            ) from None
        except (
            aiohttp.ServerDisconnectedError,
            aiohttp.ClientPayloadError,
            aiohttp.ClientOSError,
        ) as error:
            raise CallError("dropped", f"connection dropped ({type(error).__name__})") from None
        except aiohttp.ClientError as error:
            raise CallError(
                "dropped", f"{type(error).__name__}: {redact(str(error))[:200]}"
            ) from None
        latency = time.perf_counter() - started
        if status != 200:
            failure = error_for_status(status, text, headers)
            if (
                failure.kind == "bad_request"
                and "response_format" in body
                and "response_format" in text
            ):
                # The server does not do structured output: ask plainly from now on.
                self._schema_supported = False
                return await self.complete(request)
            raise failure
        try:
            data = json.loads(text)
        except ValueError:
            raise CallError("server", f"response is not JSON: {redact(text[:200])!r}") from None
        return completion_from_json(data, latency)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def import_litellm() -> ModuleType:
    """Import litellm without letting it touch the network (price table) or print banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.drop_params = True
    return litellm


class LiteLLM:
    """Any provider litellm knows, by model string (`anthropic/...`, `gemini/...`, `local/...`)."""

    def __init__(self, endpoint: str | None = None, timeout_s: float = 60.0):
        remember_url(endpoint)
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self._litellm: ModuleType | None = None

    def lookup(self, request: Request) -> Completion | None:
        return None

    def warm(self) -> None:
        self._lib()

    def _lib(self) -> ModuleType:
        if self._litellm is None:
            self._litellm = import_litellm()
            local.register(self._litellm)
        return self._litellm

    async def complete(self, request: Request) -> Completion:
        litellm = self._lib()
        if request.model.startswith("local/"):
            # stops the run if it cannot work here
            local.model_path(request.model.removeprefix("local/"))
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": self.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
        }
        if self.endpoint:
            kwargs["api_base"] = self.endpoint
            if request.model.startswith(LEAN_PREFIX) and not os.environ.get("OPENAI_API_KEY"):
                kwargs["api_key"] = (
                    "no-key"  # a self-hosted OpenAI-compatible server often needs none
                )
        if request.response_format and _supports_schema(litellm, request.model):
            kwargs["response_format"] = request.response_format
        # llama.cpp needs logits_all for them
        if request.logprobs and not request.model.startswith("local/"):
            kwargs["logprobs"] = (
                True  # dropped by litellm for a provider that has none (drop_params)
            )
        started = time.perf_counter()
        try:
            response = await litellm.acompletion(**kwargs)
        # litellm maps every provider's failure onto its own exception types
        except Exception as error:
            raise classify_litellm_error(litellm, error) from None
        latency = time.perf_counter() - started
        completion = completion_from_json(response.model_dump(), latency)
        try:
            cost = float(litellm.completion_cost(completion_response=response))
        except Exception:  # no price known for this model: the cost stays unknown, not zero
            cost = None
        return Completion(**{**completion.to_json(), "cost": cost}, latency_s=latency)

    async def aclose(self) -> None:
        # litellm caches HTTP clients bound to this event loop; close them before the loop ends.
        if self._litellm is not None:
            await self._litellm.close_litellm_async_clients()


def _supports_schema(litellm: Any, model: str) -> bool:
    if model.startswith("local/"):
        return True
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:
        return False


def _transport_kind(error: BaseException) -> ErrorKind | None:
    """litellm reports a refused connection as a 500; the exception chain knows better."""
    import httpx

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if (
            isinstance(current, httpx.TimeoutException)
            or type(current).__name__ == "APITimeoutError"
        ):
            return "timeout"
        if isinstance(current, (httpx.ConnectError, ConnectionRefusedError)):
            return "connection"
        if isinstance(current, (httpx.RemoteProtocolError, httpx.ReadError, ConnectionResetError)):
            return "dropped"
        current = current.__cause__ or current.__context__
    return None


def classify_litellm_error(litellm: Any, error: Exception) -> CallError:
    message = redact(str(error))[:300]
    kind = _transport_kind(error)
    if kind is not None:
        return CallError(kind, message)
    status = getattr(error, "status_code", None)
    response = getattr(error, "response", None)
    headers = (
        getattr(response, "headers", None) or getattr(error, "litellm_response_headers", None) or {}
    )
    pairs: list[tuple[ErrorKind, str]] = [
        ("rate_limit", "RateLimitError"),
        ("auth", "AuthenticationError"),
        ("auth", "PermissionDeniedError"),
        ("timeout", "Timeout"),
        ("connection", "APIConnectionError"),
        ("server", "InternalServerError"),
        ("server", "ServiceUnavailableError"),
        ("server", "BadGatewayError"),
        ("bad_request", "BadRequestError"),
        ("bad_request", "NotFoundError"),
    ]
    for kind, name in pairs:
        cls = getattr(litellm, name, None)
        if cls is not None and isinstance(error, cls):
            after = (
                retry_after(headers.get("retry-after"))
                if kind == "rate_limit" and hasattr(headers, "get")
                else None
            )
            return CallError(kind, message, after, status)
    if isinstance(status, int):
        return error_for_status(status, message, headers if hasattr(headers, "get") else None)
    return CallError("other", f"{type(error).__name__}: {message}")
