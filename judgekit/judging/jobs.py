"""Jobs: the calls a calibration makes — one per criterion, example and trial — and the one
concurrency idiom that runs them: an async pool with a bound, results in input order, and one way
to run it from synchronous code (`run_sync`), inside a running event loop too.

>>> import asyncio
>>> async def double(x):
...     return 2 * x
>>> asyncio.run(run_bounded([1, 2, 3], double, concurrency=2))
[2, 4, 6]
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from judgekit.errors import InputError
from judgekit.inputs.criteria import ClaimsCriterion, LLMCriterion
from judgekit.inputs.pairwise import PairwiseCriterion
from judgekit.inputs.sets import Example
from judgekit.judging.answers import (
    RESPONSE_FORMAT,
    Calls,
    call_failed,
    lookup,
    readable,
    verdict_from,
)
from judgekit.judging.prompts import compile_template, fill, prompt_template
from judgekit.judging.verdicts import Verdict
from judgekit.llm.endpoints import endpoint_variables, environment_endpoint
from judgekit.llm.protocol import LLM, CallError, Request
from judgekit.llm.retry import RetryPolicy
from judgekit.secrets import public_url


def endpoint_named(
    criterion: LLMCriterion | ClaimsCriterion | PairwiseCriterion,
    calibrated: str | None,
    model: str,
) -> str | None:
    """The endpoint to ask again for a calibration that asked `calibrated` (its public form, as a
    report or the history keeps it): the criterion's own `judge.api_base` when it is that endpoint
    (with its credentials), else the environment's when it is (with its credentials;
    OPENAI_BASE_URL names the endpoint of OpenAI-style models only, `model`'s). None is the
    provider's own endpoint, which a calibration that named none asked. A report or a history is
    data, not settings: an endpoint named by it alone (one edited, imported or restored from a
    shared cache) is refused, never sent the provider's key; and an endpoint the environment names
    now, when the calibration asked another, is never asked in its stead."""
    own = criterion.judge.api_base
    environment = environment_endpoint(model)
    variables = " (or ".join(endpoint_variables(model)) + ")" if endpoint_variables(model) else ""
    if calibrated is None:
        # The calibration named no endpoint: the provider's own (a report made before the
        # environment's endpoint was recorded may also have asked that one: it is refused too).
        named = (
            f"names {public_url(own)!r}"
            if own is not None
            else f"{variables} names {public_url(environment)!r}"
            if environment is not None
            else None
        )
        if named is not None:
            raise InputError.one(
                f"criteria/{criterion.id}.yaml",
                "judge.api_base",
                f"its calibration named no endpoint (the provider's own), but {named} now; "
                "calibrate it again",
            )
        return None
    if own is not None and public_url(own) == calibrated:
        return own
    if environment and public_url(environment) == calibrated:
        return environment
    raise InputError.one(
        f"criteria/{criterion.id}.yaml",
        "judge.api_base",
        f"its calibration asked {calibrated!r}, "
        f"which neither judge.api_base nor {endpoint_variables(model)[0]} names; an endpoint read "
        "from a report or "
        "the history is never asked on its own: name it in one of them",
    )


def reask_for(criterion: LLMCriterion | ClaimsCriterion, policy: RetryPolicy | None = None) -> int:
    """Times an unreadable answer is asked again: the criterion's `judge.reask_unreadable`, else
    the policy's."""
    own = criterion.judge.reask_unreadable
    return own if own is not None else (policy or RetryPolicy()).unreadable


@dataclass(frozen=True)
class Job:
    """One call to make: a criterion's prompt for one example, in one trial; an unreadable answer is
    asked again up to `reask` times. (A claims criterion's check is a `judgekit.claims.ClaimsJob`,
    with the same `model`, `endpoint`, `cached` and `ask`.)"""

    criterion_id: str
    example_id: str
    request: Request
    reask: int = RetryPolicy.unreadable

    @property
    def model(self) -> str:
        return self.request.model

    @property
    def endpoint(self) -> str | None:
        return self.request.endpoint

    @property
    def trial(self) -> int:
        return self.request.trial

    def cached(self, llm: LLM) -> Verdict | None:
        # `lookup(..., readable, ...)`, reading the answer once: readable() is "its verdict is not
        # unparseable".
        hit = llm.lookup(self.request)
        verdict = None if hit is None else verdict_from(hit, self.example_id, self.trial)
        return (
            None
            if verdict is None or (self.reask and verdict.abstention == "unparseable")
            else verdict
        )

    def planned(self, llm: LLM) -> tuple[list[Request], int, int]:
        """What asking would take, asking nothing: the calls to make, the answers cached, and the
        calls that cannot be known before others are answered (none here; see ClaimsJob)."""
        return (
            ([], 1, 0)
            if lookup(llm, self.request, readable, self.reask)
            else ([self.request], 0, 0)
        )

    async def ask(self, llm: LLM) -> Verdict:
        """The verdict; a call that fails after its retries makes an abstention with its cause."""
        calls = Calls(self.reask)
        try:
            answer = await calls.ask(llm, self.request, readable)
        except CallError as error:
            return call_failed(self.example_id, self.trial, error, calls.usage())
        return verdict_from(answer, self.example_id, self.trial, calls.usage())


@dataclass(frozen=True)
class Asking:
    """How a judge's calls are made, beside its model and trials: the endpoint, structured output,
    the re-asks of an unreadable answer (`reask_for`) and log-probabilities (`wants_logprobs`)."""

    endpoint: str | None = None
    structured: bool = True
    reask: int = RetryPolicy.unreadable
    logprobs: bool = False
    via: str = "auto"  # the transport: part of the cache key when not the default


def jobs_for(
    criterion: LLMCriterion,
    examples: Sequence[Example],
    model: str,
    trials: int,
    asking: Asking | None = None,
) -> list[Job]:
    """The jobs of judging `examples` by an llm criterion: one per example and trial."""
    asking = Asking() if asking is None else asking
    compiled = compile_template(prompt_template(criterion))
    settings = criterion.judge
    shown = {  # what the judge is shown: an example without context gets the criterion's
        e.id: {**e.fields(), "context": criterion.context_for(e.context)} for e in examples
    }
    return [
        Job(
            criterion.id,
            example.id,
            Request(
                model=model,
                messages=fill(compiled, shown[example.id]),
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                response_format=RESPONSE_FORMAT if asking.structured else None,
                trial=trial,
                endpoint=asking.endpoint,
                via=asking.via,
                logprobs=asking.logprobs,
            ),
            asking.reask,
        )
        for example in examples
        for trial in range(trials)
    ]


T = TypeVar("T")
R = TypeVar("R")


async def run_bounded(
    items: Sequence[T],
    work: Callable[[T], Awaitable[R]],
    concurrency: int,
    progress: Callable[[int, int], None] | None = None,
) -> list[R]:
    """Run `work` over items with at most `concurrency` in flight; results in input order.

    The first exception (for instance ProviderUnreachable) cancels the rest and propagates.
    """
    results: list[Any] = [None] * len(items)
    queue = iter(enumerate(items))
    done = 0

    async def worker() -> None:
        nonlocal done
        # The workers share one iterator: no task per item, no semaphore churn.
        for index, item in queue:
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


def run_sync(coroutine: Coroutine[Any, Any, R]) -> R:
    """Run a coroutine to its end from synchronous code: in this thread when no event loop runs here
    (a script, the CLI), else on a loop of its own in another thread (Jupyter, an async test), so
    the caller's running loop is never re-entered and `calibrate()` works wherever Python runs.

    >>> async def three():
    ...     return 3
    >>> run_sync(three())
    3
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_boxed(coroutine)).value
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgekit") as pool:
        return pool.submit(asyncio.run, _boxed(coroutine)).result().value


class _Box(Generic[R]):
    """A result whose repr costs nothing: Python 3.11's asyncio.run formats the repr of its main
    task (result included) when it restores the SIGINT handler, which for a report of a million
    verdicts took seconds."""

    __slots__ = ("value",)

    def __init__(self, value: R):
        self.value = value

    def __repr__(self) -> str:
        return "<result>"


async def _boxed(coroutine: Coroutine[Any, Any, R]) -> _Box[R]:
    return _Box(await coroutine)
