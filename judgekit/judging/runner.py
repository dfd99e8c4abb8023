"""Judge runs: every example of every LLM criterion through its judge, in one bounded pool,
cached answers first — or, with early stopping, in seeded random order and batches until the
gate's decision on each criterion's whole set can no longer change (judgekit.stats.sequential).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from judgekit.errors import CallsFailed, NoVerdicts
from judgekit.inputs.criteria import ClaimsCriterion, Criterion, LLMCriterion
from judgekit.inputs.identity import order_keys
from judgekit.inputs.policy import Thresholds
from judgekit.inputs.sets import CalibrationSet, Example
from judgekit.judging.build_setup import endpoint_for
from judgekit.judging.claims import ClaimsJob, claims_jobs
from judgekit.judging.jobs import Asking, Job, jobs_for, reask_for, run_bounded
from judgekit.judging.selective import wants_logprobs
from judgekit.judging.setup import JudgeSetup, Source
from judgekit.judging.verdicts import Verdict, majority
from judgekit.llm import open_llm
from judgekit.llm.protocol import LLM
from judgekit.llm.retry import RetryPolicy
from judgekit.secrets import public_url
from judgekit.stats.sequential import (
    Rule,
    content_order,
    content_seed,
    decide,
    next_look,
    stop_order,
)


@dataclass(frozen=True)
class RunSettings:
    """How a run's judges are asked, beside each one's setup (`Task`): the pool, the cache (answers
    older than `max_age_s` asked again), retries (unreadable answers asked again: `reask_for`);
    and, for early stopping, the seed of the order and each criterion's gate thresholds
    (`stop_early`: criterion id -> Thresholds)."""

    concurrency: int = 16
    cache_dir: Path | None = None
    timeout_s: float = 60.0
    retry: RetryPolicy | None = None
    max_age_s: float | None = None
    not_before: float | None = None  # cached answers obtained before it are asked again
    stop_early: dict[str, Thresholds] | None = None
    seed: int = 0
    # Early stopping's rule (judgekit.stats.sequential): the sequential one orders each set by what
    # its examples are (`content_order`), not by `seed`.
    stop_rule: Rule = "sequential"
    # The criteria judged selectively: one trial asks for log-probabilities.
    selective: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Task:
    """One judge over one set of examples, as a run is given it: the criterion, its examples, and
    the setup of the judge asked (judgekit.judging.setup: the model, the endpoint, the transport,
    structured answers, trials). `url` is the setup's endpoint as asked, with the credentials the
    user gave it; it is never written anywhere. A run knows its tasks by their place in it, not by
    id: two candidates of one criterion are two tasks of one run."""

    criterion: LLMCriterion | ClaimsCriterion
    examples: CalibrationSet
    setup: JudgeSetup
    url: str | None = None

    @property
    def model(self) -> str:
        return self.setup.model or ""

    @property
    def trials(self) -> int:
        return self.setup.trials


def task_of(
    criterion: LLMCriterion | ClaimsCriterion,
    examples: CalibrationSet,
    setup: JudgeSetup,
    given: str | None = None,
) -> Task:
    """The task of asking `setup`'s judge over `examples`: asked at the endpoint `given`
    (`--api-base`), else at the one the criterion or the environment names (`endpoint_for`),
    which is the setup's."""
    url = endpoint_for(criterion, given, setup.model)
    if public_url(url) != setup.endpoint:
        raise ValueError(f"the setup's endpoint {setup.endpoint!r} is not {public_url(url)!r}")
    return Task(criterion, examples, setup, url)


@dataclass(frozen=True)
class Calibration:
    """One criterion's judge measured on its examples: the criterion, the examples, the judge's
    setup, where the verdicts came from, and per example judged (in the set's order) its trials.
    What calibrate, compare and improve report on (judgekit.pipeline.criterion_report)."""

    criterion: Criterion
    examples: CalibrationSet
    setup: JudgeSetup
    source: Source
    trials: list[list[Verdict]]


@dataclass(frozen=True)
class Stop:
    """Where the judging of a criterion stopped early, and the decision that let it."""

    decision: str | None  # PASS or FAIL once settled; None when the set ran out first
    judged: int
    total: int
    looks: int
    calls_saved: int
    seed: int = 0  # the order's (judgekit.stats.sequential.stop_order)
    batch: int = 10  # examples judged between two looks
    rule: Rule = "exact"


@dataclass
class JudgedSets:
    """What judging the tasks gave, each list in the tasks' order: every verdict (per example
    judged, in the set's order, its trials), where early stopping stopped, and the labelled
    claims verified alone (claims criteria); and the time it took."""

    verdicts: list[list[list[Verdict]]]
    elapsed_s: float = 0.0
    stops: list[Stop | None] = field(default_factory=list)
    gold: list[dict[str, Verdict]] = field(default_factory=list)


_Tagged = tuple[int, "Job | ClaimsJob"]  # a job and the place of its task in the run


def stack_of(settings: RunSettings, model: str, url: str | None, via: str) -> LLM:
    """The LLM stack a run asks `model` at `url` through (judgekit.llm.open_llm), as its settings
    say: the cache, timeouts, connections, retries and the oldest cached answer it may use."""
    return open_llm(
        model,
        url,
        str(settings.cache_dir) if settings.cache_dir is not None else None,
        settings.timeout_s,
        max_connections=max(settings.concurrency, 1),
        retry=settings.retry,
        via=via,
        max_age_s=settings.max_age_s,
        not_before=settings.not_before,
    )


class _Asker:
    """One LLM stack per model, endpoint and transport (or the injected one); asks jobs, cached
    ones first."""

    def __init__(self, tasks: Sequence[Task], settings: RunSettings, llm: LLM | None):
        self.llm, self.settings = llm, settings
        reach = [(t.model, t.url, t.setup.via or "auto") for t in tasks]
        stacks: dict[tuple[str, str | None, str], LLM] = (
            {}
            if llm
            else {
                (model, url, via): stack_of(settings, model, url, via)
                for model, url, via in sorted(set(reach), key=str)
            }
        )
        self.stacks = list(stacks.values())
        self.by_task = [llm or stacks[r] for r in reach]
        self.elapsed_s = 0.0

    async def ask(
        self, jobs: Sequence[_Tagged], progress: Callable[[int, int], None] | None
    ) -> list[Verdict]:
        # Cached answers straight from disk: a fully cached re-run makes no client at all.
        verdicts: list[Verdict | None] = [job.cached(self.by_task[t]) for t, job in jobs]
        misses = [i for i, v in enumerate(verdicts) if v is None]
        for stack in {
            id(self.by_task[jobs[i][0]]): self.by_task[jobs[i][0]] for i in misses
        }.values():
            stack.warm()
        started = time.perf_counter()
        answered = await run_bounded(
            misses,
            lambda i: jobs[i][1].ask(self.by_task[jobs[i][0]]),
            self.settings.concurrency,
            progress,
        )
        self.elapsed_s += time.perf_counter() - started
        for i, verdict in zip(misses, answered, strict=True):
            verdicts[i] = verdict
        return [v for v in verdicts if v is not None]

    async def aclose(self) -> None:
        for stack in self.stacks:
            await stack.aclose()


def jobs_of(
    task: Task, examples: Sequence[Example], settings: RunSettings
) -> Sequence[Job | ClaimsJob]:
    """The jobs of judging these examples of a task's criterion, asked as its setup says."""
    criterion, setup = task.criterion, task.setup
    asking = Asking(
        task.url,
        setup.structured is not False,
        reask_for(criterion, settings.retry),
        logprobs=wants_logprobs(criterion.id in settings.selective, setup.trials),
        via=setup.via or "auto",
    )
    if isinstance(criterion, ClaimsCriterion):
        return claims_jobs(criterion, examples, task.model, setup.trials, asking)
    return jobs_for(criterion, examples, task.model, setup.trials, asking)


def labelled_claims_jobs(
    task: Task, examples: Sequence[Example], settings: RunSettings
) -> list[ClaimsJob]:
    """A claims criterion's checks of the labelled claims of these examples, verified alone."""
    criterion = task.criterion
    if not isinstance(criterion, ClaimsCriterion):
        return []
    return [
        ClaimsJob(
            criterion,
            e,
            task.model,
            0,
            task.url,
            task.setup.structured is not False,
            gold=tuple(claim.claim for claim in e.claims),
            reask=reask_for(criterion, settings.retry),
            via=task.setup.via or "auto",
        )
        for e in examples
        if e.claims
    ]


def check_some_call_answered(
    criterion_id: str, model: str, all_trials: list[list[Verdict]]
) -> None:
    """A criterion whose every call failed has no calibration: stop, saying why, instead of
    reporting 100% abstentions."""
    verdicts = [v for trials in all_trials for v in trials]
    if verdicts and all((v.abstention or "").startswith("error:") for v in verdicts):
        cause, _ = Counter(v.reason or v.abstention or "" for v in verdicts).most_common(1)[0]
        raise CallsFailed(criterion_id, model, len(all_trials), cause)


def check_some_verdict_given(
    criterion_id: str, model: str, all_trials: list[list[Verdict]]
) -> None:
    """A criterion whose judge answered but never gave a verdict (every answer unreadable,
    refused, tied, or no list of claims) has no calibration either: stop, saying why, instead of
    reporting 100% abstentions with exit 0. After `check_some_call_answered`."""
    verdicts = [v for trials in all_trials for v in trials]
    if verdicts and all(v.passed is None for v in verdicts):
        said = Counter(
            f"{v.abstention}: {v.reason}" if v.reason and v.abstention else v.abstention or ""
            for v in verdicts
        )
        raise NoVerdicts(criterion_id, model, len(all_trials), said.most_common(1)[0][0])


def _group(
    tasks: Sequence[Task], jobs: Sequence[_Tagged], verdicts: list[Verdict]
) -> list[list[list[Verdict]]]:
    grouped: list[dict[str, list[Verdict]]] = [
        {e.id: [] for e in t.examples.examples} for t in tasks
    ]
    for (t, job), verdict in zip(jobs, verdicts, strict=True):
        grouped[t][job.example_id].append(verdict)
    return [[trials for trials in by_example.values() if trials] for by_example in grouped]


def _tagged(
    tasks: Sequence[Task], examples: Sequence[Sequence[Example]], settings: RunSettings
) -> list[_Tagged]:
    return [
        (t, job)
        for t, (task, chosen) in enumerate(zip(tasks, examples, strict=True))
        for job in jobs_of(task, chosen, settings)
    ]


async def judge_sets(
    tasks: Sequence[Task],
    settings: RunSettings,
    llm: LLM | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> JudgedSets:
    """Judge every example of every task (with `settings.stop_early`, until each decision is
    settled)."""
    asker = _Asker(tasks, settings, llm)
    try:
        if settings.stop_early is not None:
            run = await _in_looks(asker, tasks, settings, settings.stop_early)
        else:
            jobs = _tagged(tasks, [t.examples.examples for t in tasks], settings)
            verdicts = await asker.ask(jobs, progress)
            run = JudgedSets(_group(tasks, jobs, verdicts), asker.elapsed_s, [None] * len(tasks))
        run.gold = await _labelled_claims(asker, tasks, settings, run)
        return run
    finally:
        await asker.aclose()


async def _labelled_claims(
    asker: _Asker, tasks: Sequence[Task], settings: RunSettings, run: JudgedSets
) -> list[dict[str, Verdict]]:
    """Claims criteria whose judged examples carry claim-level labels: verify the labelled claims
    too, so that extraction and verification errors can be told apart."""
    judged = [{trials[0].example_id for trials in by_example} for by_example in run.verdicts]
    gold: list[_Tagged] = [
        (t, job)
        for t, task in enumerate(tasks)
        for job in labelled_claims_jobs(
            task, [e for e in task.examples.examples if e.id in judged[t]], settings
        )
    ]
    checked: list[dict[str, Verdict]] = [{} for _ in tasks]
    for (t, job), verdict in zip(gold, await asker.ask(gold, None) if gold else [], strict=True):
        checked[t][job.example_id] = verdict
    return checked


async def _in_looks(
    asker: _Asker,
    tasks: Sequence[Task],
    settings: RunSettings,
    thresholds: dict[str, Thresholds],
) -> JudgedSets:
    """Batches of examples in seeded random order; after each, stop the tasks whose decision
    `settings.stop_rule` reaches (judgekit.stats.sequential: the looks where `next_look` puts them,
    each asked of `decide`, as the gate derives them again)."""
    rule = settings.stop_rule
    seeds: list[int] = []
    order: list[list[Example]] = []
    for task in tasks:
        examples, cid = task.examples.examples, task.criterion.id
        if rule == "sequential":
            keys = order_keys(task.criterion, examples)
            seeds.append(content_seed(keys))
            order.append([examples[i] for i in content_order(keys, cid)])
        else:
            seeds.append(settings.seed)
            order.append([examples[i] for i in stop_order(len(examples), settings.seed, cid)])
    done = [0] * len(tasks)
    looks = [0] * len(tasks)
    decisions: dict[int, str | None] = {}
    all_jobs: list[_Tagged] = []
    all_verdicts: list[Verdict] = []
    step = max(settings.concurrency, 10)
    active = list(range(len(tasks)))
    while active:
        chunks: list[Sequence[Example]] = [[] for _ in tasks]
        for t in active:
            end = next_look(done[t], step, len(order[t]), rule)
            chunks[t] = order[t][done[t] : end]
            done[t] = end
        jobs = _tagged(tasks, chunks, settings)
        all_jobs += jobs
        all_verdicts += await asker.ask(jobs, None)
        grouped = _group(tasks, all_jobs, all_verdicts)
        still = []
        for t in active:
            looks[t] += 1
            labels = {e.id: e.label for e in tasks[t].examples.examples}
            final = [
                (labels[trials[0].example_id], majority(trials).passed) for trials in grouped[t]
            ]
            tpr = (
                sum(1 for y, v in final if y and v),
                sum(1 for y, v in final if y and v is not None),
            )
            tnr = (
                sum(1 for y, v in final if not y and v is False),
                sum(1 for y, v in final if not y and v is not None),
            )
            rest = order[t][done[t] :]
            left = (sum(1 for e in rest if e.label), sum(1 for e in rest if not e.label))
            decision = decide(tpr, tnr, left, thresholds[tasks[t].criterion.id], rule, done[t])
            if decision is None and done[t] < len(order[t]):
                still.append(t)
            else:
                decisions[t] = decision
        active = still
    stops: list[Stop | None] = [
        Stop(
            decisions.get(t),
            done[t],
            len(order[t]),
            looks[t],
            (len(order[t]) - done[t]) * task.trials,
            seed=seeds[t],
            batch=step,
            rule=rule,
        )
        for t, task in enumerate(tasks)
    ]
    return JudgedSets(_group(tasks, all_jobs, all_verdicts), asker.elapsed_s, stops)
