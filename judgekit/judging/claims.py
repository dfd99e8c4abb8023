"""Hallucination checks by claim extraction: a `kind: claims` criterion's two steps and its rule.

1. Extraction: the judge lists the reply's atomic, self-contained factual claims, as JSON.
2. Verification: each claim against the example's `context` — supported or not, quoting the
   evidence; all claims of a reply in one call (`batch: true`) or one call per claim.
3. The strict rule: pass iff at least one claim was extracted and every claim is supported. A
   reply without claims fails unless the criterion says `no_claims: pass`; an unreadable step is
   asked again as an unreadable verdict is (judgekit.judging.answers.Calls), then an abstention,
   never a guess.

Every call goes through the same LLM stack as any judge call (cache, retries, usage). The prompts
are in judgekit.judging.prompts, the strict rule (`aggregate`) in judgekit.judging.verdicts.

>>> read_claims('{"claims": ["Paris is in France", "Paris is in France", " "]}')
['Paris is in France']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from judgekit.inputs.criteria import ClaimsCriterion
from judgekit.inputs.sets import Example
from judgekit.judging.answers import Calls, call_failed, json_object, lookup, refused, usage_of
from judgekit.judging.jobs import Asking
from judgekit.judging.prompts import (
    EXTRACT_PROMPT,
    SYSTEM_PROMPT,
    VERIFY_ONE_PROMPT,
    VERIFY_PROMPT,
    fence,
)
from judgekit.judging.verdicts import ClaimCheck, Usage, Verdict, aggregate
from judgekit.llm.protocol import LLM, CallError, Completion, Request
from judgekit.llm.retry import RetryPolicy

EXTRACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
    "required": ["claims"],
    "additionalProperties": False,
}
VERIFY_ONE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"evidence": {"type": "string"}, "supported": {"type": "boolean"}},
    "required": ["evidence", "supported"],
    "additionalProperties": False,
}
VERIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"claim": {"type": "integer"}, **VERIFY_ONE_SCHEMA["properties"]},
                "required": ["claim", "evidence", "supported"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["results"],
    "additionalProperties": False,
}


def _format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _messages(
    criterion: ClaimsCriterion, template: str, values: dict[str, str]
) -> list[dict[str, str]]:
    # One pass over the template, so text from the example is never expanded again; the field
    # tags get the request's fence (judgekit.judging.prompts.fence).
    system = criterion.judge.system or SYSTEM_PROMPT
    values = {**values, "fence": fence([system, template, *values.values()])}
    user = re.sub(r"\{\{(\w+)\}\}", lambda m: values.get(m.group(1), m.group(0)), template)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def read_claims(text: str) -> list[str] | None:
    """The extracted claims, or None when the answer is not a list of claims."""
    data = json_object(text)
    claims = data.get("claims") if data else None
    if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
        return None
    return list(dict.fromkeys(c.strip() for c in claims if c.strip()))  # none empty or repeated


def read_checks(text: str, claims: Sequence[str]) -> list[ClaimCheck] | None:
    """The batch verification of `claims`, or None unless it decides every claim exactly once."""
    data = json_object(text)
    results = data.get("results") if data else None
    if not isinstance(results, list):
        return None
    found: dict[int, ClaimCheck] = {}
    for item in results:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("claim"), int)
            and isinstance(item.get("supported"), bool)
        ):
            return None
        number = item["claim"]
        if not 1 <= number <= len(claims) or number in found:
            return None
        evidence = item.get("evidence")
        found[number] = ClaimCheck(
            claims[number - 1], item["supported"], evidence if isinstance(evidence, str) else None
        )
    return [found[n] for n in range(1, len(claims) + 1)] if len(found) == len(claims) else None


def read_check(text: str, claim: str) -> ClaimCheck | None:
    data = json_object(text)
    if not data or not isinstance(data.get("supported"), bool):
        return None
    evidence = data.get("evidence")
    return ClaimCheck(claim, data["supported"], evidence if isinstance(evidence, str) else None)


@dataclass(frozen=True)
class ClaimsJob:
    """One claims check to make: one example of a claims criterion, in one trial; an unreadable step
    is asked again up to `reask` times."""

    criterion: ClaimsCriterion
    example: Example
    model: str
    trial: int = 0
    endpoint: str | None = None
    structured: bool = True
    # Verify these labelled claims instead of extracting (stage errors).
    gold: tuple[str, ...] | None = None
    reask: int = RetryPolicy.unreadable
    via: str = "auto"

    @property
    def criterion_id(self) -> str:
        return self.criterion.id

    @property
    def example_id(self) -> str:
        return self.example.id

    def _request(
        self, messages: list[dict[str, str]], name: str, schema: dict[str, Any]
    ) -> Request:
        settings = self.criterion.judge
        return Request(
            model=self.model,
            messages=messages,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            response_format=_format(name, schema) if self.structured else None,
            trial=self.trial,
            endpoint=self.endpoint,
            via=self.via,
        )

    def extraction(self) -> Request:
        return self._request(
            _messages(
                self.criterion,
                EXTRACT_PROMPT,
                {"question": self.criterion.question, "output": self.example.output},
            ),
            "claims",
            EXTRACT_SCHEMA,
        )

    def verifications(self, claims: Sequence[str]) -> list[Request]:
        source = self.criterion.context_for(self.example.context) or ""
        values = {"question": self.criterion.question, "context": source}
        if self.criterion.batch:
            listed = "\n".join(f"{n}. {claim}" for n, claim in enumerate(claims, start=1))
            return [
                self._request(
                    _messages(self.criterion, VERIFY_PROMPT, {**values, "claims": listed}),
                    "verification",
                    VERIFY_SCHEMA,
                )
            ]
        return [
            self._request(
                _messages(self.criterion, VERIFY_ONE_PROMPT, {**values, "claim": claim}),
                "verification",
                VERIFY_ONE_SCHEMA,
            )
            for claim in claims
        ]

    def _checks(self, claims: Sequence[str]) -> list[tuple[Request, Callable[[Completion], bool]]]:
        """The verification calls of `claims`, each with what makes its answer readable."""
        requests = self.verifications(claims)
        if self.criterion.batch:
            return [(requests[0], lambda c: read_checks(c.text, claims) is not None or refused(c))]
        return [
            (request, _verified(claim)) for request, claim in zip(requests, claims, strict=True)
        ]

    def _verdict(
        self, extracted: Completion, verified: Sequence[Completion], usage: Usage
    ) -> Verdict:
        at = min(c.obtained_at for c in [extracted, *verified])
        claims = read_claims(extracted.text)
        if claims is None:
            return Verdict(
                self.example_id,
                None,
                "the extraction step's answer is not a list of claims",
                self.trial,
                "unparseable extraction",
                raw=extracted.text[:2000],
                usage=usage,
                obtained_at=at,
            )
        if not claims:
            passed, reason = aggregate([], self.criterion.no_claims)
            return Verdict(
                self.example_id, passed, reason, self.trial, usage=usage, claims=(), obtained_at=at
            )
        return replace(self._checked(claims, verified, usage), obtained_at=at)

    def _gold(self, verified: Sequence[Completion], usage: Usage) -> Verdict:
        verdict = self._checked(list(self.gold or ()), verified, usage)
        return replace(verdict, obtained_at=min((c.obtained_at for c in verified), default=None))

    def _checked(self, claims: list[str], verified: Sequence[Completion], usage: Usage) -> Verdict:
        if self.criterion.batch:
            checks = read_checks(verified[0].text, claims)
        else:
            single = [read_check(c.text, claim) for c, claim in zip(verified, claims, strict=True)]
            read = [s for s in single if s is not None]
            checks = None if len(read) < len(single) else read
        if checks is None:
            unread = (
                verified[0]
                if self.criterion.batch
                else next(
                    c
                    for c, claim in zip(verified, claims, strict=True)
                    if read_check(c.text, claim) is None
                )
            )
            return Verdict(
                self.example_id,
                None,
                "the verification step's answer does not decide every claim",
                self.trial,
                "unparseable verification",
                raw=unread.text[:2000],
                usage=usage,
                claims=tuple(ClaimCheck(claim, None) for claim in claims),
            )
        passed, reason = aggregate(checks, self.criterion.no_claims)
        return Verdict(
            self.example_id, passed, reason, self.trial, usage=usage, claims=tuple(checks)
        )

    def cached(self, llm: LLM) -> Verdict | None:
        """The verdict from cached answers alone; None when a step is uncached (or unreadable)."""
        if self.gold is not None:
            hits = [lookup(llm, request, ok, self.reask) for request, ok in self._checks(self.gold)]
            verified = [v for v in hits if v is not None]
            return None if len(verified) < len(hits) else self._gold(verified, usage_of(verified))
        extracted = lookup(llm, self.extraction(), _extracted, self.reask)
        if extracted is None:
            return None
        claims = read_claims(extracted.text)
        if not claims:
            return self._verdict(extracted, (), usage_of([extracted]))
        hits = [lookup(llm, request, ok, self.reask) for request, ok in self._checks(claims)]
        verified = [v for v in hits if v is not None]
        if len(verified) < len(hits):
            return None
        return self._verdict(extracted, verified, usage_of([extracted, *verified]))

    def planned(self, llm: LLM) -> tuple[list[Request], int, int]:
        """As `Job.planned`. The verification calls depend on the extraction's answer: counted when
        it is cached, else unknown until it is given (the third count: extractions yet to make)."""
        if self.gold is not None:
            return _split(llm, self._checks(self.gold), self.reask)
        extracted = lookup(llm, self.extraction(), _extracted, self.reask)
        if extracted is None:
            return [self.extraction()], 0, 1
        claims = read_claims(extracted.text)
        to_ask, cached, _ = _split(llm, self._checks(claims), self.reask) if claims else ([], 0, 0)
        return to_ask, cached + 1, 0

    async def ask(self, llm: LLM) -> Verdict:
        """Both steps; the verification calls of one reply run one after another. A call that fails
        after its retries makes the check an abstention, with the usage of every call made."""
        calls = Calls(self.reask)
        try:
            if self.gold is not None:
                verified = [
                    await calls.ask(llm, request, ok) for request, ok in self._checks(self.gold)
                ]
                return self._gold(verified, calls.usage())
            extracted = await calls.ask(llm, self.extraction(), _extracted)
            claims = read_claims(extracted.text)
            if not claims:
                return self._verdict(extracted, (), calls.usage())
            verified = [await calls.ask(llm, request, ok) for request, ok in self._checks(claims)]
            return self._verdict(extracted, verified, calls.usage())
        except CallError as error:
            return call_failed(self.example_id, self.trial, error, calls.usage())


def _split(
    llm: LLM, checks: list[tuple[Request, Callable[[Completion], bool]]], reask: int
) -> tuple[list[Request], int, int]:
    hits = [lookup(llm, request, ok, reask) for request, ok in checks]
    return (
        [request for (request, _), hit in zip(checks, hits, strict=True) if hit is None],
        sum(h is not None for h in hits),
        0,
    )


def _verified(claim: str) -> Callable[[Completion], bool]:
    """What makes a verification answer of `claim` readable: it decides the claim, or refuses."""
    return lambda answer: read_check(answer.text, claim) is not None or refused(answer)


def _extracted(answer: Completion) -> bool:
    """Whether an extraction answer can be read (a list of claims) or is a refusal."""
    return read_claims(answer.text) is not None or refused(answer)


def claims_jobs(
    criterion: ClaimsCriterion,
    examples: Sequence[Example],
    model: str,
    trials: int,
    asking: Asking | None = None,
) -> list[ClaimsJob]:
    """The jobs of checking `examples` by a claims criterion: one per example and trial."""
    asking = Asking() if asking is None else asking
    return [
        ClaimsJob(
            criterion,
            example,
            model,
            trial,
            asking.endpoint,
            asking.structured,
            reask=asking.reask,
            via=asking.via,
        )
        for example in examples
        for trial in range(trials)
    ]


@dataclass(frozen=True)
class Stages:
    """Where a claims check goes wrong, over the examples with claim-level labels: the
    verification step against the labelled claims (positive = supported), and each wrong
    end-to-end verdict put down to extraction (right when the labelled claims are verified
    instead) or to verification (wrong even then)."""

    examples: int
    claims: int
    tp: int
    fp: int
    tn: int
    fn: int
    extraction_errors: int
    verification_errors: int
    unreadable: int


def recorded_gold(
    examples: Sequence[Example], final: Sequence[Verdict], no_claims: str
) -> dict[str, Verdict]:
    """For recorded per-claim verdicts: each labelled example's labelled claims, verified as the
    recording judge verified the same claim (matched by text, case and spacing aside), so that
    `stages` can tell extraction from verification errors without a model call. An example
    whose recorded claims lack one of its labelled claims cannot be told apart: it counts as
    unreadable."""

    def key(text: str) -> str:
        return " ".join(text.split()).casefold()

    gold: dict[str, Verdict] = {}
    for example, verdict in zip(examples, final, strict=True):
        if not example.claims or verdict.claims is None:
            continue
        recorded = {key(c.claim): c for c in verdict.claims}
        matches = [recorded.get(key(c.claim)) for c in example.claims]
        found = [c for c in matches if c is not None]
        if len(found) < len(matches):
            gold[example.id] = Verdict(
                example.id, None, "the recorded claims do not include every labelled claim"
            )
            continue
        checks = tuple(
            ClaimCheck(c.claim, f.supported, f.evidence)
            for c, f in zip(example.claims, found, strict=True)
        )
        passed, reason = aggregate(checks, no_claims)
        gold[example.id] = Verdict(example.id, passed, reason, claims=checks)
    return gold


def stages(
    examples: Sequence[Example], final: Sequence[Verdict], gold: dict[str, Verdict]
) -> Stages:
    tp = fp = tn = fn = extraction = verification = unreadable = used = claims = 0
    for example, verdict in zip(examples, final, strict=True):
        checked = gold.get(example.id)
        if not example.claims or checked is None:
            continue
        if checked.passed is None or checked.claims is None:
            unreadable += 1
            continue
        used += 1
        for labelled, check in zip(example.claims, checked.claims, strict=True):
            claims += 1
            if labelled.supported:
                tp, fn = (tp + 1, fn) if check.supported else (tp, fn + 1)
            else:
                fp, tn = (fp + 1, tn) if check.supported else (fp, tn + 1)
        if verdict.passed is not None and verdict.passed != example.label:
            if checked.passed == example.label:
                extraction += 1
            else:
                verification += 1
    return Stages(used, claims, tp, fp, tn, fn, extraction, verification, unreadable)
