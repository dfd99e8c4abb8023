"""Scripted verdicts and the fault kinds the test doubles (judgekit.testing) share, and FakeLLM,
the double to inject in process.

Fault kinds: rate_limit (429 with Retry-After), server_error (500), auth (401), bad_request (400,
as for an unknown model), hang (no answer until the client gives up), reset (connection closed at
once), truncated (half a body), garbage (an answer that is no verdict), refusal, malformed_json (a
broken verdict object), echo (a 400 whose body repeats the request line, query included, and its
Authorization header, as some providers' error pages do). A script may answer an example with a
`Fault` instead of a verdict: every request of that example gets it, and with `Sure` a verdict and
the probability of its answer token, which both doubles give as log-probabilities when asked.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypedDict

from judgekit.llm.protocol import CallError, Completion, ErrorKind, Request

FAULTS = (
    "rate_limit",
    "server_error",
    "auth",
    "bad_request",
    "hang",
    "reset",
    "truncated",
    "garbage",
    "refusal",
    "malformed_json",
    "echo",
)
REFUSAL_TEXT = "I'm sorry, but I can't help with that request."
GARBAGE_TEXT = "Lorem ipsum dolor sit amet, the weather is lovely today."
MALFORMED_TEXT = '{"reasoning": "The reply says it", "passed": tru'
FAULT_TEXTS = {"garbage": GARBAGE_TEXT, "refusal": REFUSAL_TEXT, "malformed_json": MALFORMED_TEXT}
# What FakeLLM raises for the faults that are no answer (FakeServer sends them over HTTP).
FAULT_ERRORS: dict[str, tuple[ErrorKind, int | None]] = {
    "rate_limit": ("rate_limit", 429),
    "server_error": ("server", 500),
    "auth": ("auth", 401),
    "bad_request": ("bad_request", 400),
    "echo": ("bad_request", 400),
    "hang": ("timeout", None),
    "reset": ("dropped", None),
    "truncated": ("dropped", None),
}


@dataclass(frozen=True)
class Fault:
    """A fault in place of a verdict, for every request of the example a script gives it to.

    >>> Fault("hang").kind
    'hang'
    """

    kind: str

    def __post_init__(self) -> None:
        if self.kind not in FAULTS:
            raise ValueError(f"unknown fault kind {self.kind!r}; use one of {', '.join(FAULTS)}")


@dataclass(frozen=True)
class Sure:
    """A verdict and the probability the judge gives its answer token (selective judging).

    >>> tokens = logprobs_of(answer_text(Sure(True, 0.5)), Sure(True, 0.5))
    >>> [(t["token"], t["logprob"], t["bytes"]) for t in tokens if t["logprob"] < -0.1]
    [('true', -0.6931471805599453, [116, 114, 117, 101])]
    >>> [t["top_logprobs"] for t in tokens if t["logprob"] < -0.1]
    [[]]
    """

    passed: bool
    probability: float

    def __post_init__(self) -> None:
        if not 0 < self.probability <= 1:
            raise ValueError(f"probability={self.probability}: give a number above 0 and at most 1")


SURE = 0.999  # the probability of the answer token of a plain scripted verdict
_TOKENS = re.compile(r"\w+|\s+|[^\w\s]")


class TokenLogprob(TypedDict):
    """One token of an OpenAI-style `logprobs.content`."""

    token: str
    logprob: float
    bytes: list[int]
    top_logprobs: list[TokenLogprob]  # always empty: the doubles give no alternatives


def logprobs_of(text: str, verdict: bool | str | Fault | Sure) -> list[TokenLogprob]:
    """An OpenAI-style `logprobs.content` for an answer: every token near certain, the verdict's
    word (`true` / `false`, or the last PASS / FAIL) at the `Sure` probability."""
    tokens = _TOKENS.findall(text)
    p = verdict.probability if isinstance(verdict, Sure) else SURE
    words = [i for i, t in enumerate(tokens) if t in ("true", "false", "PASS", "FAIL")]
    out: list[TokenLogprob] = []
    for i, token in enumerate(tokens):
        logprob = math.log(p) if words and i == words[-1] else math.log(SURE) / 100
        out.append(
            {"token": token, "logprob": logprob, "bytes": list(token.encode()), "top_logprobs": []}
        )
    return out


Answer = Callable[[str], "bool | str | Fault | Sure"]


def judged_reply(prompt: str) -> str:
    """The reply under judgement: the last <output> block of a judgekit prompt (few-shot examples
    come before it), or the whole prompt when there is none."""
    start = prompt.rfind("<output>\n")
    end = prompt.rfind("\n</output>")
    return prompt[start + len("<output>\n") : end] if 0 <= start < end else prompt


def script(
    verdicts: Mapping[str, bool | str | Fault | Sure], default: bool | str | Fault | Sure = True
) -> Answer:
    """An answer function: the verdict of the first key the judged reply contains, else `default`.

    A bool becomes a contract-following JSON verdict; a str is answered verbatim; a Fault is given.
    """
    items = list(verdicts.items())

    def answer(prompt: str) -> bool | str | Fault | Sure:
        reply = judged_reply(prompt)
        for needle, verdict in items:
            if needle in reply:
                return verdict
        return default

    return answer


def answer_text(verdict: bool | str | Fault | Sure) -> str:
    """The text of a scripted answer (a Fault's, for those that are answers: garbage, refusal,
    malformed_json)."""
    if isinstance(verdict, Fault):
        return FAULT_TEXTS.get(verdict.kind, "")
    if isinstance(verdict, str):
        return verdict
    if isinstance(verdict, Sure):
        verdict = verdict.passed
    return json.dumps({"reasoning": "scripted verdict", "passed": verdict})


def prompt_of(messages: list[dict[str, str]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages)


class FakeLLM:
    """An in-process LLM: `answer(request)` returns text, a Completion, or raises a CallError.

    >>> import asyncio
    >>> llm = FakeLLM(lambda r: CallError("server", "boom"))
    >>> asyncio.run(llm.complete(Request("m", [])))
    Traceback (most recent call last):
    judgekit.llm.protocol.CallError: server: boom
    """

    def __init__(self, answer: Callable[[Request], str | Completion | CallError]):
        self.answer = answer
        self.calls = 0
        self.requests: list[Request] = []

    @classmethod
    def scripted(
        cls,
        verdicts: Mapping[str, bool | str | Fault | Sure],
        default: bool | str | Fault | Sure = True,
    ) -> FakeLLM:
        """Answers scripted as `script` does; a request for log-probabilities gets them (`Sure`)."""
        decide = script(verdicts, default)

        def answer(request: Request) -> str | Completion | CallError:
            verdict = decide(prompt_of(request.messages))
            if isinstance(verdict, Fault) and verdict.kind in FAULT_ERRORS:
                kind, status = FAULT_ERRORS[verdict.kind]
                return CallError(kind, f"scripted fault: {verdict.kind}", status=status)
            text = answer_text(verdict)
            if not request.logprobs:
                return text
            tokens = [(t["token"], t["logprob"]) for t in logprobs_of(text, verdict)]
            return Completion(text=text, prompt_tokens=10, completion_tokens=5, logprobs=tokens)

        return cls(answer)

    async def complete(self, request: Request) -> Completion:
        self.calls += 1
        self.requests.append(request)
        result = self.answer(request)
        if isinstance(result, CallError):
            raise result
        return (
            result
            if isinstance(result, Completion)
            else Completion(text=result, prompt_tokens=10, completion_tokens=5)
        )

    def lookup(self, request: Request) -> Completion | None:
        return None

    def warm(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
