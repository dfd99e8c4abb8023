"""Reading a judge's answer into a verdict. The answer contract is JSON `{"reasoning": str,
"passed": bool}` (reasoning first, so the verdict follows from it), also accepted inside a code
fence, or a last line that is exactly PASS or FAIL. Anything else is unreadable: it is asked again
(`Calls`, up to the retry policy's `unreadable` times, past the cache), and if it stays unreadable
it is an abstention that keeps the raw answer. A refusal is an abstention of its own, never asked
again; a call that failed after its retries is one too.

>>> read_answer('{"reasoning": "it says so", "passed": true}')
(True, 'it says so', None)
>>> read_answer("The reply never mentions it.\\nFAIL")
(False, 'The reply never mentions it.', None)
>>> read_answer("I'm sorry, but I can't help with that.")[2]
'refusal'
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from judgekit.judging.verdicts import Usage, Verdict
from judgekit.llm.protocol import LLM, CallError, Completion, Request

Readable = Callable[[Completion], bool]

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "passed": {"type": "boolean"}},
    "required": ["reasoning", "passed"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "verdict", "schema": ANSWER_SCHEMA, "strict": True},
}

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_REFUSAL = re.compile(
    r"^\s*(i'?m sorry|i am sorry|i can(?:'|no)?t (?:help|assist|comply)|i cannot (?:help|assist|"
    r"comply)|i won'?t|as an ai\b)",
    re.IGNORECASE,
)


def json_object(
    text: str, wanted: Callable[[dict[str, Any]], bool] = lambda data: True
) -> dict[str, Any] | None:
    """The first JSON object in an answer that `wanted` accepts: the whole text, a code fence, or
    the span from the first `{` to the last `}`. A raw line break or tab inside a string (a small
    model's reasoning broken across lines, unescaped) is read as the character it is."""
    candidates = [text.strip()] + _FENCE.findall(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate, strict=False)
        except ValueError:
            continue
        if isinstance(data, dict) and wanted(data):
            return data
    return None


def _json_verdict(text: str) -> tuple[bool, str | None] | None:
    data = json_object(text, lambda d: isinstance(d.get("passed"), bool))
    if data is None:
        return None
    reasoning = data.get("reasoning")
    return data["passed"], reasoning if isinstance(reasoning, str) else None


def read_answer(
    text: str, refusal: str | None = None
) -> tuple[bool | None, str | None, str | None]:
    """`(passed, reasoning, abstention)` from a judge's answer; never guesses."""
    found = _json_verdict(text)
    if found is not None:
        return found[0], found[1], None
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines and lines[-1].strip("*.` ").upper() in ("PASS", "FAIL"):
        reasoning = "\n".join(lines[:-1]) or None
        return lines[-1].strip("*.` ").upper() == "PASS", reasoning, None
    if refusal or _REFUSAL.match(text):
        return None, refusal or text.strip()[:300], "refusal"
    return None, None, "unparseable"


_JSON_ANSWER = re.compile(r'"passed"\s*:\s*(true|false)')
_LINE_ANSWER = re.compile(r"\b(PASS|FAIL)\b", re.IGNORECASE)


def answer_probability(completion: Completion, passed: bool | None = None) -> float | None:
    """The probability the judge gave its verdict's word (`true` / `false` after "passed", or the
    last PASS / FAIL): the product of the probabilities of the tokens that spell it. None without
    log-probabilities, when the tokens do not spell the answer, or when they spell two different
    answers (or another than `passed`, the verdict read).

    >>> tokens = [('{"passed": ', 0.0), ("tr", -0.2), ("ue", 0.0), ("}", 0.0)]
    >>> round(answer_probability(Completion('{"passed": true}', logprobs=tokens)), 3)
    0.819
    """
    tokens = completion.logprobs
    if not tokens:
        return None
    try:
        text = "".join(str(token) for token, _ in tokens)
        found = list(_JSON_ANSWER.finditer(text)) or list(_LINE_ANSWER.finditer(text))
        # Two answers in one text (a verdict, then another "passed"): whose probability is the
        # verdict's cannot be told, so there is none; the verdict is then escalated, not trusted.
        if not found or len({m.group(1).lower() for m in found}) > 1:
            return None
        if passed is not None and found[-1].group(1).lower() not in (
            ("true", "pass") if passed else ("false", "fail")
        ):
            return None
        start, end = found[-1].span(1)
        total, at = 0.0, 0
        for token, logprob in tokens:
            if at < end and at + len(token) > start:
                total += float(logprob)
            at += len(token)
    except (TypeError, ValueError):
        return None
    return min(1.0, math.exp(total)) if math.isfinite(total) else 0.0


def verdict_from(
    completion: Completion, example_id: str, trial: int, usage: Usage | None = None
) -> Verdict:
    """The verdict an answer gives; `usage` of the calls behind it (default: this answer's own)."""
    usage = usage or usage_of([completion])
    if completion.finish_reason == "content_filter" and not completion.text:
        return Verdict(
            example_id,
            None,
            "the provider's content filter stopped the answer",
            trial,
            "refusal",
            usage=usage,
            obtained_at=completion.obtained_at,
        )
    passed, reasoning, abstention = read_answer(completion.text, completion.refusal)
    return Verdict(
        example_id,
        passed,
        reasoning,
        trial,
        abstention,
        raw=completion.text[:2000] if abstention else None,
        usage=usage,
        obtained_at=completion.obtained_at,
        confidence=answer_probability(completion, passed) if passed is not None else None,
    )


def call_failed(example_id: str, trial: int, error: CallError, usage: Usage) -> Verdict:
    """The abstention of a call that failed after its retries: why, and after how many attempts."""
    tries = f" (after {error.attempts} attempts)" if error.attempts > 1 else ""
    return Verdict(
        example_id,
        None,
        f"{error}{tries}",
        trial,
        f"error: {error.kind}",
        usage=usage,
        obtained_at=time.time(),
    )


def refused(completion: Completion) -> bool:
    """Whether an answer is a refusal (the provider's flag, its content filter, or the words)."""
    return (
        bool(completion.refusal)
        or (completion.finish_reason == "content_filter" and not completion.text)
        or bool(_REFUSAL.match(completion.text))
    )


def readable(completion: Completion) -> bool:
    """Whether an answer is a verdict or a refusal; anything else is asked again (`Calls`)."""
    return verdict_from(completion, "", 0).abstention != "unparseable"


def usage_of(answers: Sequence[Completion], failed: int = 0, reasked: int = 0) -> Usage:
    """What the answers behind one verdict cost, with `failed` calls that gave none."""
    live = [c for c in answers if not c.cached]  # cached answers cost nothing this time
    known = [c.cost for c in live if c.cost is not None]
    return Usage(
        cached=not live and not failed,
        prompt_tokens=sum(c.prompt_tokens for c in live),
        completion_tokens=sum(c.completion_tokens for c in live),
        cost=None if not live or len(known) < len(live) else sum(known),  # a cost unknown: None
        latency_s=sum(c.latency_s for c in live),
        calls=len(live) + failed,
        cached_calls=len(answers) - len(live),
        reasked=reasked,
        all_prompt_tokens=sum(c.prompt_tokens for c in answers),
        all_completion_tokens=sum(c.completion_tokens for c in answers),
    )


def lookup(llm: LLM, request: Request, is_readable: Readable, reask: int) -> Completion | None:
    """The cached answer to `request`, or None: not cached, or unreadable and to be asked again."""
    answer = llm.lookup(request)
    return None if answer is None or (reask and not is_readable(answer)) else answer


class Calls:
    """The calls behind one verdict: each question asked once, and an unreadable answer asked again
    up to `reask` times, past the cache — a provider's glitch is not the judge's verdict, and a
    refusal is, so it is never asked again. `usage()` counts every call, the re-asks apart.

    >>> import asyncio
    >>> from judgekit.testing import FakeLLM
    >>> answers = iter(["Lorem ipsum", "It says so.\\nPASS"])
    >>> calls = Calls(reask=1)
    >>> asyncio.run(calls.ask(FakeLLM(lambda r: next(answers)), Request("m", []), readable)).text
    'It says so.\\nPASS'
    >>> calls.usage().calls, calls.usage().reasked
    (2, 1)
    """

    def __init__(self, reask: int):
        self.reask = reask
        self.answers: list[Completion] = []
        self.reasked = 0
        self.failed = 0

    async def ask(self, llm: LLM, request: Request, is_readable: Readable) -> Completion:
        """The last answer to `request`; a call failing after its retries raises its CallError."""
        answer = await self._one(llm, request)
        for _ in range(self.reask):
            if is_readable(answer):
                break
            self.reasked += 1
            # The same question (the same cache key), not served from the cache; the new answer
            # replaces the cached one only if it can be read.
            answer = await self._one(llm, replace(request, keep_if=is_readable))
        return answer

    async def _one(self, llm: LLM, request: Request) -> Completion:
        try:
            answer = await llm.complete(request)
        except CallError:
            self.failed += 1
            raise
        self.answers.append(answer)
        return answer

    def usage(self) -> Usage:
        return usage_of(self.answers, self.failed, self.reasked)
