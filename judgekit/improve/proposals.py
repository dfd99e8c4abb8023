"""The changes `judgekit improve` tries on a criterion's judge, made from the dev split alone:
few-shot examples chosen from the dev examples, settings (trials and temperature), and rewordings
an optimizer model proposes from the dev disagreements and the judge's reasons.

>>> from judgekit.inputs.criteria import LLMCriterion
>>> from judgekit.inputs.sets import Example
>>> c = LLMCriterion(id="c", question="Blocked?")
>>> dev = [Example(id=f"e{i}", output=f"reply {i}", passed=i % 2 == 0) for i in range(6)]
>>> wrong = [Verdict(f"e{i}", i % 2 != 0) for i in range(2)] + [
...     Verdict(f"e{i}", i % 2 == 0) for i in range(2, 6)
... ]
>>> [s.output for s in few_shot(c, dev, wrong, 2).examples]
['reply 0', 'reply 1']
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from judgekit.inputs.criteria import FewShot, LLMCriterion
from judgekit.inputs.sets import Example
from judgekit.inputs.validation import problems_of
from judgekit.judging.answers import json_object
from judgekit.judging.verdicts import Verdict
from judgekit.llm.protocol import Request

WORDING = ("question", "pass_when", "fail_when")
PROPOSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "proposals": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {k: {"type": "string"} for k in ("rationale", *WORDING)},
                "required": ["rationale", *WORDING],
                "additionalProperties": False,
            },
        }
    },
    "required": ["proposals"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Proposal:
    """One changed judge to measure on dev: its name, the criterion as it would be, and why."""

    name: str
    criterion: LLMCriterion
    why: str


def few_shot(
    criterion: LLMCriterion, dev: Sequence[Example], final: Sequence[Verdict], k: int
) -> LLMCriterion:
    """The criterion with up to `k` dev examples as its few-shot examples, balanced by class: the
    judge's disagreements first (abstentions among them), then those nearest its decision (least
    sure: the lowest confidence, or the trials least agreed), then the rest in set order."""
    verdict = {v.example_id: v for v in final}

    def rank(e: Example) -> tuple[bool, float]:
        v = verdict.get(e.id)
        wrong = v is None or v.passed != e.label
        return (not wrong, 1.0 if v is None or v.confidence is None else v.confidence)

    chosen: list[Example] = []
    by_class = {cls: sorted((e for e in dev if e.label == cls), key=rank) for cls in (True, False)}
    for i in range(k):
        pool = by_class[i % 2 == 0] or by_class[i % 2 != 0]
        if pool:
            chosen.append(pool.pop(0))
    shots = [
        FewShot(
            input=e.input if "input" in criterion.inputs else None,
            output=e.output,
            context=e.context if "context" in criterion.inputs else None,
            passed=e.label,
        )
        for e in chosen
    ]
    return criterion.model_copy(update={"examples": [*criterion.examples, *shots]})


def settings(criterion: LLMCriterion) -> list[Proposal]:
    """Trials: the majority of 3 and of 5 at temperature 0.7 (of 1 at 0, when it asks several
    now)."""
    out = []
    for trials, temperature in ((1, 0.0), (3, 0.7), (5, 0.7)):
        judge = criterion.judge
        if (trials, temperature) != (judge.trials, judge.temperature):
            changed = judge.model_copy(update={"trials": trials, "temperature": temperature})
            out.append(
                Proposal(
                    f"trials-{trials}",
                    criterion.model_copy(update={"judge": changed}),
                    f"the majority of {trials} trial(s) at temperature {temperature:g}",
                )
            )
    return out


def optimizer_request(
    criterion: LLMCriterion,
    dev: Sequence[Example],
    final: Sequence[Verdict],
    model: str,
    n: int,
    limit: int = 12,
) -> Request:
    """What the optimizer model is asked: the criterion, up to `limit` dev disagreements with the
    judge's reasons, and for `n` revised wordings (structured output)."""
    verdict = {v.example_id: v for v in final}
    wrong = [
        (e, verdict[e.id]) for e in dev if e.id in verdict and verdict[e.id].passed != e.label
    ][:limit]
    cases = "\n\n".join(
        f"<case>\nreply: {e.output}\n"
        + (f"user: {e.input}\n" if e.input else "")
        + f"people said: {'PASS' if e.label else 'FAIL'}; the judge said: "
        + f"{'abstained' if v.passed is None else 'PASS' if v.passed else 'FAIL'} "
        f"({v.reason or 'no reason'})\n</case>"
        for e, v in wrong
    )
    current = {k: getattr(criterion, k) for k in WORDING}
    prompt = (
        f"An LLM judge decides one yes/no criterion about replies of an AI agent. "
        f"Its wording now:\n"
        f"{json.dumps(current, indent=2)}\n\n"
        f"On these labelled replies it disagreed with people:\n\n"
        f"{cases or '(none)'}"
        f"\n\nPropose {n} revised wordings (question, pass_when, fail_when) that would make the "
        "judge agree "
        "with people on replies like these without naming any of them: keep the criterion one fact "
        "a person "
        "could check in five seconds, and say in `rationale` what each changes."
    )
    return Request(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        temperature=0.7,
        max_tokens=2000,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "proposals", "schema": PROPOSAL_SCHEMA, "strict": True},
        },
    )


def rewordings(criterion: LLMCriterion, answer: str, n: int) -> tuple[list[Proposal], list[str]]:
    """The optimizer's proposals, each validated as a criterion file would be; and why any were
    dropped."""
    data = json_object(answer, lambda d: isinstance(d.get("proposals"), list))
    if data is None:
        return [], ["the optimizer's answer holds no proposals (not the JSON asked for)"]
    out, dropped = [], []
    for number, item in enumerate(data["proposals"][:n], start=1):
        if not isinstance(item, dict):
            dropped.append(f"proposal {number} is not an object")
            continue
        changes = {k: item[k] for k in WORDING if isinstance(item.get(k), str) and item[k].strip()}
        try:
            revised = LLMCriterion.model_validate({**criterion.model_dump(), **changes})
            revised.share_source_of(criterion)  # the context file read with the criterion
        except ValidationError as error:
            dropped.append(
                f"proposal {number}: " + "; ".join(str(p) for p in problems_of(error, "proposal"))
            )
            continue
        if all(getattr(revised, k) == getattr(criterion, k) for k in WORDING):
            dropped.append(f"proposal {number} changes nothing")
            continue
        out.append(
            Proposal(
                f"reworded-{number}", revised, str(item.get("rationale") or "a revised wording")
            )
        )
    return out, dropped
