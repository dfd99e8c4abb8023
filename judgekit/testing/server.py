"""FakeServer: an OpenAI-compatible server on 127.0.0.1, to test the real network path — verdicts
scripted per example, faults injected by kind, by rate or for the first requests of an example.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from judgekit.testing.scripts import (
    FAULT_TEXTS,
    FAULTS,
    REFUSAL_TEXT,
    Answer,
    Fault,
    Sure,
    answer_text,
    logprobs_of,
    prompt_of,
    script,
)


class FakeServer:
    """An OpenAI-compatible `/v1/chat/completions` endpoint on 127.0.0.1, in a background thread.

    `faults` maps a fault kind to the share of requests that get it (seeded); `fail_first` maps a
    piece of prompt text to the faults its first requests get, in order; an example the script
    answers with a `Fault` gets it at every request. With
    `structured_output=False` a request that asks for a response_format gets a 400, as from
    servers that do not support it. A request for `logprobs` gets them: the verdict's word at the
    probability a `Sure` answer gives, every other token near certain. `models` gives some models
    answers of their own (by the name a request gives, without the provider's prefix). `stats`
    counts outcomes.
    """

    # Each argument is a keyword callers pass to shape the double: grouping them into one object
    # would break every test that builds a FakeServer.
    def __init__(  # noqa: PLR0913 - a public double's keywords, kept for its callers
        self,
        answer: Answer | None = None,
        latency: float = 0.0,
        faults: Mapping[str, float] | None = None,
        fail_first: Mapping[str, list[str]] | None = None,
        retry_after: float = 1.0,
        seed: int = 0,
        port: int = 0,
        structured_output: bool = True,
        models: Mapping[str, Answer] | None = None,
    ):
        unknown = set(faults or {}) | {k for kinds in (fail_first or {}).values() for k in kinds}
        unknown -= set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault kind(s) {sorted(unknown)}; use {FAULTS}")
        self.answer = answer or script({}, default=True)
        # the answer of a model by the name a request gives (no provider prefix)
        self.models = dict(models or {})
        self.latency = latency
        self.faults = dict(faults or {})
        self.fail_first = {k: list(v) for k, v in (fail_first or {}).items()}
        self.retry_after = retry_after
        self.structured_output = structured_output
        self.port = port
        self.stats: Counter[str] = Counter()
        self.log: list[tuple[float, str, str]] = []  # (monotonic time, prompt, outcome) per request
        self.targets: list[str] = []  # the path and query each request was sent to
        # what the scripted answer raised, one line per request it raised on (the request is
        # answered 400 with that line, not dropped)
        self.script_errors: list[str] = []
        self._rng = random.Random(seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> int:
        return sum(self.stats.values())

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeServer:
        """Listen, in a thread of its own; OSError when the port cannot be had (in use, say)."""
        ready = threading.Event()
        failed: list[OSError] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(self._listen())
            except OSError as error:  # said by start(), in the caller's thread
                failed.append(error)
                loop.close()
                return
            finally:
                ready.set()
            self._loop = loop
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="judgekit-fake-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failed:
            raise failed[0]
        return self

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            await self._server.wait_closed()
            self._server = None

    async def _cancel_handlers(self) -> None:
        """Requests still held (a hang) end with the server, not as tasks left pending."""
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def go_down(self) -> None:
        """Stop listening and drop every connection: the provider is down (connections refused)."""
        if self._loop:
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)

    def come_back(self) -> None:
        """Listen again on the same port."""
        if self._loop:
            asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)

    def stop(self) -> None:
        if self._loop:
            self.go_down()
            asyncio.run_coroutine_threadsafe(self._cancel_handlers(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread:
                self._thread.join(10)
            self._loop = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP --------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                headers: dict[str, str] = {}
                while True:
                    header = await reader.readline()
                    if header in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = header.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                try:
                    if not await self._respond(line.decode("latin-1"), body, writer, headers):
                        return
                except ScriptRaised as raised:  # nothing of this answer was written yet
                    self.script_errors.append(str(raised))
                    self._send(writer, 400, {"error": {"message": f"{raised}; fix the script"}})
        # cancelled: server stopping
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    def _choose_fault(self, prompt: str) -> str | None:
        for needle, kinds in self.fail_first.items():
            if needle in prompt and kinds:
                return kinds.pop(0)
        for kind, rate in self.faults.items():
            if self._rng.random() < rate:
                return kind
        return None

    async def _respond(
        self,
        request_line: str,
        body: bytes,
        writer: asyncio.StreamWriter,
        headers: Mapping[str, str] | None = None,
    ) -> bool:
        """Answer one request; return False when the connection must end."""
        self.targets.append(request_line.split(" ")[1] if request_line.count(" ") >= 2 else "")
        if not request_line.startswith("POST") or "/chat/completions" not in request_line:
            self._send(writer, 404, {"error": {"message": "not found"}})
            return True
        try:
            payload = json.loads(body)
            prompt = prompt_of(payload["messages"])
        except (ValueError, KeyError, TypeError):
            self._send(writer, 400, {"error": {"message": "bad request body"}})
            return True
        fault = self._choose_fault(prompt)
        answer = self.models.get(str(payload.get("model")), self.answer)
        unsupported = payload.get("response_format") and not self.structured_output
        scripted = _asked(answer, prompt) if fault is None and not unsupported else None
        if isinstance(scripted, Fault):
            fault = scripted.kind
        self.log.append((time.monotonic(), prompt, fault or "ok"))
        if unsupported:
            self.stats["unsupported_response_format"] += 1
            self._send(
                writer,
                400,
                {"error": {"message": "response_format is not supported by this server"}},
            )
            return True
        if self.latency:
            await asyncio.sleep(self.latency)
        self.stats[fault or "ok"] += 1
        if fault == "hang":
            await asyncio.sleep(3600)
            return False
        if fault == "reset":
            writer.transport.abort()
            return False
        error = self._error_of(fault, request_line, headers)
        if error is not None:
            self._send(writer, *error)
            return True
        text, verdict = FAULT_TEXTS.get(fault or ""), scripted
        if text is None:  # an answer (cut short, for a truncated body)
            verdict = _asked(answer, prompt) if scripted is None else scripted
            text = answer_text(verdict)
        completion = self._completion(payload, prompt, text, verdict, fault)
        if fault == "truncated":
            data = json.dumps(completion).encode()
            writer.write(self._head(200, len(data)) + data[: len(data) // 2])
            await writer.drain()
            writer.transport.abort()
            return False
        self._send(writer, 200, completion)
        return True

    def _error_of(
        self, fault: str | None, request_line: str, headers: Mapping[str, str] | None
    ) -> tuple[int, dict[str, Any], dict[str, str] | None] | None:
        """The status, body and extra headers of a fault answered by an HTTP error (None for any
        other)."""
        if fault == "rate_limit":
            return (
                429,
                {"error": {"message": "rate limit exceeded"}},
                {"retry-after": f"{self.retry_after:g}"},
            )
        if fault == "server_error":
            return 500, {"error": {"message": "internal error"}}, None
        if fault == "echo":
            return (
                400,
                {
                    "error": {
                        "message": f"cannot handle {request_line.strip()} with "
                        f"authorization: {(headers or {}).get('authorization')}"
                    }
                },
                None,
            )
        if fault == "auth":
            return 401, {"error": {"message": "invalid api key"}}, None
        if fault == "bad_request":
            return 400, {"error": {"message": "the model does not exist"}}, None
        return None

    def _completion(
        self,
        payload: dict[str, Any],
        prompt: str,
        text: str,
        verdict: bool | str | Fault | Sure | None,
        fault: str | None,
    ) -> dict[str, Any]:
        """The chat completion that answers `text`, with log-probabilities when asked."""
        return {
            "id": f"fake-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": payload.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {
                        "role": "assistant",
                        "content": text,
                        "refusal": REFUSAL_TEXT if fault == "refusal" else None,
                    },
                    **(
                        {"logprobs": {"content": logprobs_of(text, verdict or False)}}
                        if payload.get("logprobs")
                        else {}
                    ),
                }
            ],
            "usage": {
                "prompt_tokens": len(prompt) // 4,
                "completion_tokens": len(text) // 4,
                "total_tokens": (len(prompt) + len(text)) // 4,
            },
        }

    @staticmethod
    def _head(status: int, length: int, extra: Mapping[str, str] | None = None) -> bytes:
        reason = {
            200: "OK",
            400: "Bad Request",
            401: "Unauthorized",
            404: "Not Found",
            429: "Too Many Requests",
            500: "Internal Server Error",
        }[status]
        lines = [
            f"HTTP/1.1 {status} {reason}",
            "content-type: application/json",
            f"content-length: {length}",
            *(f"{k}: {v}" for k, v in (extra or {}).items()),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: object,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        data = json.dumps(body).encode()
        writer.write(self._head(status, len(data), extra) + data)


class ScriptRaised(Exception):
    """The scripted answer raised: the request is answered 400 with what it raised (a script's
    bug is said to the caller, not hidden behind a dropped connection and its retries)."""


def _asked(answer: Answer, prompt: str) -> bool | str | Fault | Sure:
    """The scripted answer to `prompt`, or ScriptRaised saying what the script raised."""
    try:
        return answer(prompt)
    except Exception as error:
        raise ScriptRaised(
            f"the fake server's script raised {type(error).__name__}: {error}"
        ) from error
