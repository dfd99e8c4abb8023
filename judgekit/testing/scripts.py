"""Scripted verdicts and the fault kinds the test doubles (judgekit.testing) share, and FakeLLM,
the double to inject in process.

Fault kinds: rate_limit (429 with Retry-After), server_error (500), auth (401), bad_request (400,
as for an unknown model), hang (no answer until the client gives up), reset (connection closed at
once), truncated (half a body), garbage (an answer that is no verdict), refusal, malformed_json (a
broken verdict object), echo (a 400 whose body repeats the request line, query included, and its
Authorization header, as some providers' error pages do). A script may answer an example with a
`Fault` instead of a verdict: every request of that example gets it, and with `Sure` a verdict and
the probability of its answer token, which both doubles give as log-probabilities when asked.

A claims check (`kind: claims`) is scripted with `Claims`: the claims its extraction step lists and
each one's support in the verification step. A plain verdict scripts one too, as a judge that
passes (or fails) everything would: the reply is its one claim, supported (or not).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypedDict

from judgekit.judging.prompts import EXTRACT_PROMPT, FENCED, VERIFY_ONE_PROMPT, VERIFY_PROMPT
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


@dataclass(frozen=True, init=False)
class Claims:
    """A claims check scripted for one reply: the claims its extraction step lists, in order, and
    each one's support in the verification step (a `Fault` for every request that verifies it).

    >>> Claims({"The card is blocked": True, "The fee is waived": False}).passed
    False
    >>> Claims({}).claims
    ()
    """

    checks: tuple[tuple[str, bool | Fault], ...]

    def __init__(self, supported: Mapping[str, bool | Fault]) -> None:
        for claim, support in supported.items():
            if not claim.strip() or not isinstance(support, bool | Fault):
                raise ValueError(
                    f"{claim!r}: {support!r}: give each claim a text and True, False or a Fault"
                )
            if claim != claim.strip() or "\n" in claim:
                # judgekit strips a claim, and lists a batch's claims a line each
                raise ValueError(f"{claim!r}: give a claim on one line, without spaces around it")
        object.__setattr__(self, "checks", tuple(supported.items()))

    @property
    def claims(self) -> tuple[str, ...]:
        return tuple(claim for claim, _ in self.checks)

    @property
    def passed(self) -> bool:
        """The verdict a judge not asked claim by claim gives: some claim, and all supported."""
        return bool(self.checks) and all(support is True for _, support in self.checks)


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


# The fence of a judgekit prompt's tags, as its instructions name it (after the fields, so the
# last such sentence is the prompt's own, not one a reply holds).
_FENCE = re.compile(re.escape(FENCED.split("{{fence}}", 1)[0]) + r"([0-9a-f]+)>")


def block(prompt: str, name: str) -> str | None:
    """The text of the last `name` block of a prompt: between `<name-FENCE>` and `</name-FENCE>`
    in judgekit's prompts (judgekit.judging.prompts.fence), between `<name>` and `</name>` in
    one without a fence (a custom prompt's); None when there is none.

    >>> block("<output>\\nhi\\n</output>", "output"), block("no block", "output")
    ('hi', None)
    """
    fences = _FENCE.findall(prompt)
    mark = f"-{fences[-1]}" if fences else ""
    opening, closing = f"<{name}{mark}>\n", f"\n</{name}{mark}>"
    start, end = prompt.rfind(opening), prompt.rfind(closing)
    return (
        prompt[start + len(opening) : end] if start >= 0 and start + len(opening) <= end else None
    )


def judged_reply(prompt: str) -> str:
    """The reply under judgement: the last output block of a judgekit prompt (few-shot examples
    come before it), or the whole prompt when there is none."""
    reply = block(prompt, "output")
    return prompt if reply is None else reply


Scripted = bool | str | Fault | Sure | Claims  # what a script gives a reply
# The last lines of the claims check's prompts (judgekit.judging.prompts): fixed, each its own.
_EXTRACT_TAIL = "\n" + EXTRACT_PROMPT.rsplit("\n", 1)[1]
_VERIFY_TAIL = "\n" + VERIFY_PROMPT.rsplit("\n", 1)[1]
_VERIFY_ONE_TAIL = "\n" + VERIFY_ONE_PROMPT.rsplit("\n", 1)[1]


def verification(prompt: str) -> tuple[str, list[str], bool] | None:
    """A claims check's verification prompt read back: its source material, the claims it asks
    about, and whether all at once (`batch`); None for any other prompt.

    >>> tags = "<context>\\nsrc\\n</context>\\n<claims>\\n1. a\\n2. b\\n</claims>"
    >>> verification(tags + _VERIFY_TAIL)
    ('src', ['a', 'b'], True)
    """
    batch = prompt.endswith(_VERIFY_TAIL)
    if not batch and not prompt.endswith(_VERIFY_ONE_TAIL):
        return None
    context = block(prompt, "context") or ""
    if not batch:
        return context, [block(prompt, "claim") or ""], False
    claims, number, rest = [], 1, block(prompt, "claims") or ""
    while rest.startswith(f"{number}. "):
        end = rest.find(f"\n{number + 1}. ")
        claims.append(rest[len(f"{number}. ") : end if end >= 0 else len(rest)])
        rest, number = (rest[end + 1 :] if end >= 0 else ""), number + 1
    return context, claims, True


def _support(verdict: Scripted, default: Scripted) -> bool | Fault:
    """What a script says of a claim: supported, not, or a fault; the default's word when the
    script gives the claim no verdict of its own (supported, when the default has none either)."""
    for said in (verdict, default):
        if isinstance(said, Fault | bool):
            return said
        if isinstance(said, Sure):
            return said.passed
    return True


def with_claims(
    find: Callable[[str], Scripted],
    supports: Mapping[tuple[str | None, str], bool | Fault],
    default: Scripted,
) -> Answer:
    """An answer function that also answers a claims check's two steps. `find` is a script's
    verdict for a text (the judged reply of a prompt); `supports` each scripted claim's support,
    by (source material, claim), or (None, claim) for any source. An extraction prompt gets the
    reply's scripted `Claims` (a plain verdict: the reply is its one claim); a verification prompt
    gets each claim's support: the scripted one, else the verdict `find` gives the claim's text."""

    def support(context: str, claim: str) -> bool | Fault:
        for key in ((context, claim), (None, claim)):
            if key in supports:
                return supports[key]
        return _support(find(claim), default)

    def answer(prompt: str) -> bool | str | Fault | Sure:
        asked = verification(prompt)
        if asked is not None:
            context, claims, batch = asked
            found = [support(context, claim) for claim in claims]
            fault = next((s for s in found if isinstance(s, Fault)), None)
            if fault is not None:
                return fault
            if not batch:
                return json.dumps({"evidence": "scripted support", "supported": found[0]})
            results = [
                {"claim": n, "evidence": "scripted support", "supported": s}
                for n, s in enumerate(found, start=1)
            ]
            return json.dumps({"results": results})
        verdict = find(prompt)
        if not prompt.endswith(_EXTRACT_TAIL):
            return verdict.passed if isinstance(verdict, Claims) else verdict
        if isinstance(verdict, Claims):
            return json.dumps({"claims": list(verdict.claims)})
        if isinstance(verdict, bool | Sure):
            return json.dumps({"claims": [judged_reply(prompt)]})
        return verdict

    return answer


def script(verdicts: Mapping[str, Scripted], default: Scripted = True) -> Answer:
    """An answer function: the verdict of the first key the judged reply contains, else `default`.

    A bool becomes a contract-following JSON verdict; a str is answered verbatim; a Fault is given;
    `Claims` script a claims check (the module's docstring).
    """
    items = list(verdicts.items())
    supports: dict[tuple[str | None, str], bool | Fault] = {}
    for verdict in verdicts.values():
        for claim, support in verdict.checks if isinstance(verdict, Claims) else ():
            if supports.setdefault((None, claim), support) != support:
                raise ValueError(
                    f"claim {claim!r} is scripted {support} for one reply and "
                    f"{supports[(None, claim)]} for another: a script verifies a claim by its text "
                    "alone; word the two claims apart, or use a verdict file (which keys a claim "
                    "by its example's source)"
                )

    def find(prompt: str) -> Scripted:
        reply = judged_reply(prompt)
        return next((verdict for needle, verdict in items if needle in reply), default)

    return with_claims(find, supports, default)


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
    def scripted(cls, verdicts: Mapping[str, Scripted], default: Scripted = True) -> FakeLLM:
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
