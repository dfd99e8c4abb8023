"""The judge: ask an LLM one criterion about one example, and read its answer into a verdict.

The answer contract is JSON `{"reasoning": str, "passed": bool}` (reasoning first, so the verdict
follows from it), also accepted inside a code fence, or a last line that is exactly PASS or FAIL.
Anything else is an abstention that keeps the raw answer; a refusal is an abstention of its own.

>>> read_answer('{"reasoning": "it says so", "passed": true}')
(True, 'it says so', None)
>>> read_answer("The reply never mentions it.\\nFAIL")
(False, 'The reply never mentions it.', None)
>>> read_answer("I'm sorry, but I can't help with that.")[2]
'refusal'
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence, TypeVar

from judgekit.criteria import LLMCriterion, compile_template, fill, prompt_template
from judgekit.llm import CallError, Completion, LLM, Request
from judgekit.sets import Example
from judgekit.verdicts import Usage, Verdict, majority

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "passed": {"type": "boolean"}},
    "required": ["reasoning", "passed"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": ANSWER_SCHEMA, "strict": True}}

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_REFUSAL = re.compile(r"^\s*(i'?m sorry|i am sorry|i can(?:'|no)?t (?:help|assist|comply)|i cannot (?:help|assist|"
                      r"comply)|i won'?t|as an ai\b)", re.IGNORECASE)


def json_object(text: str, wanted: Callable[[dict], bool] = lambda data: True) -> dict | None:
    """The first JSON object in an answer that `wanted` accepts: the whole text, a code fence, or
    the span from the first `{` to the last `}`."""
    candidates = [text.strip()] + _FENCE.findall(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
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


def read_answer(text: str, refusal: str | None = None) -> tuple[bool | None, str | None, str | None]:
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


def verdict_from(completion: Completion, example_id: str, trial: int) -> Verdict:
    usage = Usage(completion.cached, completion.prompt_tokens, completion.completion_tokens, completion.cost,
                  completion.latency_s)
    if completion.finish_reason == "content_filter" and not completion.text:
        return Verdict(example_id, None, "the provider's content filter stopped the answer", trial, "refusal",
                       usage=usage, obtained_at=completion.obtained_at)
    passed, reasoning, abstention = read_answer(completion.text, completion.refusal)
    return Verdict(example_id, passed, reasoning, trial, abstention,
                   raw=completion.text[:2000] if abstention else None, usage=usage, obtained_at=completion.obtained_at)


@dataclass(frozen=True)
class Job:
    """One call to make: a criterion's prompt for one example, in one trial. (A claims criterion's
    check is a `judgekit.claims.ClaimsJob`, with the same `model`, `cached` and `ask`.)"""

    criterion_id: str
    example_id: str
    request: Request

    @property
    def model(self) -> str:
        return self.request.model

    @property
    def trial(self) -> int:
        return self.request.trial

    def cached(self, llm: LLM) -> Verdict | None:
        hit = llm.lookup(self.request)
        return None if hit is None else verdict_from(hit, self.example_id, self.trial)

    async def ask(self, llm: LLM) -> Verdict:
        return verdict_from(await llm.complete(self.request), self.example_id, self.trial)


def jobs_for(criterion: LLMCriterion, examples: Sequence[Example], model: str, trials: int,
             api_base: str | None = None, structured: bool = True) -> list[Job]:
    compiled = compile_template(prompt_template(criterion))
    settings = criterion.judge
    return [
        Job(criterion.id, example.id, Request(
            model=model, messages=fill(compiled, example.fields()), temperature=settings.temperature,
            max_tokens=settings.max_tokens, response_format=RESPONSE_FORMAT if structured else None,
            trial=trial, api_base=api_base))
        for example in examples for trial in range(trials)
    ]


async def judge_one(llm: LLM, job: Any) -> Verdict:
    """Ask once; a call that fails after its retries becomes an abstention with its cause."""
    try:
        return await job.ask(llm)
    except CallError as error:
        return call_failed(job.example_id, job.trial, error, Usage(latency_s=0.0))


def call_failed(example_id: str, trial: int, error: CallError, usage: Usage) -> Verdict:
    """The abstention of a call that failed after its retries, saying why and after how many attempts."""
    tries = f" (after {error.attempts} attempts)" if error.attempts > 1 else ""
    return Verdict(example_id, None, f"{error}{tries}", trial, f"error: {error.kind}", usage=usage,
                   obtained_at=time.time())


T = TypeVar("T")
R = TypeVar("R")


async def run_bounded(items: Sequence[T], work: Callable[[T], Awaitable[R]], concurrency: int,
                      progress: Callable[[int, int], None] | None = None) -> list[R]:
    """Run `work` over items with at most `concurrency` in flight; results in input order.

    The first exception (for instance ProviderUnreachable) cancels the rest and propagates.
    """
    results: list[Any] = [None] * len(items)
    queue = iter(enumerate(items))
    done = 0

    async def worker() -> None:
        nonlocal done
        for index, item in queue:  # workers share one iterator: no task per item, no semaphore churn
            results[index] = await work(item)
            done += 1
            if progress:
                progress(done, len(items))

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, min(concurrency, len(items)))):
                group.create_task(worker())
    except BaseExceptionGroup as group_error:
        raise group_error.exceptions[0] from None
    return results


def terminal_progress(label: str) -> Callable[[int, int], None] | None:
    """A one-line progress counter on stderr when it is a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        return None
    step = 0

    def show(done: int, total: int) -> None:
        nonlocal step
        if done == total or done - step >= max(1, total // 200):
            step = done
            sys.stderr.write(f"\r{label}: {done}/{total} ({100 * done // total}%)")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    return show


class Judge:
    """A calibrated judge for one criterion, to call from a test: `judge(output, input=...)` -> Verdict.

    It refuses to judge (raises JudgeNotCalibrated) when the gate blocks its criterion; given a
    report's JudgeInfo it asks exactly as calibration did (model, endpoint, trials with their
    majority, structured output, transport), through the usual cache and retries.

    >>> from judgekit.criteria import RegexCriterion
    >>> check = Judge(RegexCriterion(id="r", kind="regex", question="clean?", pattern="TODO", match_means="fail"))
    >>> check("All done.").passed
    True
    """

    def __init__(self, criterion: Any, calibrated: Any = None, cache_dir: str | None = ".judgekit/cache",
                 llm: LLM | None = None, blocked: Any = None):
        self.criterion, self.calibrated = criterion, calibrated
        self.cache_dir, self.llm, self.blocked = cache_dir, llm, blocked

    def __call__(self, output: str, input: str | None = None, context: str | None = None) -> Verdict:
        import asyncio

        if self.blocked is not None:
            from judgekit.gate import JudgeNotCalibrated

            raise JudgeNotCalibrated(self.blocked)
        if self.calibrated is not None and str(self.calibrated.source).startswith("recorded:"):
            from judgekit.gate import RECORDED, Decision, GateResult, JudgeNotCalibrated

            raise JudgeNotCalibrated(GateResult((Decision(self.criterion.id, "FAIL", (
                RECORDED.format(source=self.calibrated.source),)),)))
        fields = {"input": input, "output": output, "context": context}
        from judgekit.criteria import ClaimsCriterion, RegexCriterion

        if isinstance(self.criterion, RegexCriterion):
            return Verdict("-", *self.criterion.explain(fields))
        from judgekit.errors import InputError

        info = self.calibrated
        model = (info.model if info else None) or self.criterion.judge.model
        if not model:
            raise InputError.one(f"criteria/{self.criterion.id}.yaml", "judge.model",
                                 "no judge model; set judge.model in the criterion")
        if isinstance(self.criterion, ClaimsCriterion) and not (context or "").strip():
            raise InputError.one(f"criteria/{self.criterion.id}.yaml", "context", "a claims criterion checks the "
                                 "reply against its source material: call judge(output, context=source)")
        api_base = info.api_base if info else None
        trials = int(info.parameters.get("trials", self.criterion.judge.trials)) if info else self.criterion.judge.trials
        example = Example(id="-", output=output, input=input, context=context, passed=True)
        from judgekit.claims import claims_jobs

        make = claims_jobs if isinstance(self.criterion, ClaimsCriterion) else jobs_for
        jobs = make(self.criterion, [example], model, trials, api_base, info.structured if info else True)

        async def ask() -> list[Verdict]:
            from judgekit.llm import open_llm

            llm = self.llm or open_llm(model, api_base, self.cache_dir, via=info.via if info else "auto")
            try:
                return [await judge_one(llm, job) for job in jobs]
            finally:
                if self.llm is None:
                    await llm.aclose()

        return majority(asyncio.run(ask()))
